package dev.gatun.cuda.gpu.load;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Random;

/**
 * A seeded stream of operations drawn by weight: the same seed and weights give the same
 * sequence, so a stress failure can be replayed from the seed in its message.
 *
 * @param <E> the operation kinds
 */
public final class OperationMix<E extends Enum<E>> {

    private final E[] kinds;
    /** cumulative[i] = the sum of the weights of kinds[0..i]. */
    private final int[] cumulative;
    private final Random random;

    /**
     * @param weights a weight of at least 1 for every kind that is drawn; kinds left out are never drawn
     * @throws IllegalArgumentException when there is no kind or a weight is below 1
     */
    public OperationMix(Class<E> type, Map<E, Integer> weights, long seed) {
        Objects.requireNonNull(weights, "weights");
        if (weights.isEmpty()) {
            throw new IllegalArgumentException("an operation mix needs at least one kind with a weight");
        }
        EnumMap<E, Integer> ordered = new EnumMap<>(type);
        ordered.putAll(weights);
        @SuppressWarnings("unchecked")
        E[] k = (E[]) java.lang.reflect.Array.newInstance(type, ordered.size());
        this.kinds = k;
        this.cumulative = new int[ordered.size()];
        int i = 0;
        int sum = 0;
        for (Map.Entry<E, Integer> e : ordered.entrySet()) {
            if (e.getValue() < 1) {
                throw new IllegalArgumentException("weight of " + e.getKey() + " is " + e.getValue()
                        + "; give at least 1, or leave the kind out");
            }
            sum = Math.addExact(sum, e.getValue());
            kinds[i] = e.getKey();
            cumulative[i] = sum;
            i++;
        }
        this.random = new Random(seed);
    }

    /** The next operation. Not thread-safe: one mix per worker thread. */
    public E next() {
        int r = random.nextInt(cumulative[cumulative.length - 1]);
        for (int i = 0; i < cumulative.length; i++) {
            if (r < cumulative[i]) {
                return kinds[i];
            }
        }
        throw new AssertionError("unreachable: r < total weight");
    }

    /** The random source behind the mix, for the operation's own data (sizes, values). */
    public Random random() {
        return random;
    }
}
