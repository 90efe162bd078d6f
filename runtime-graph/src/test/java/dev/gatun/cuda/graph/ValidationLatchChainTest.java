package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrowsExactly;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.IntSupplier;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.Transformer;

/**
 * Random sequences of begin, attach, activate, consume, unregister and kernel raises, with tokens
 * drawn from every generation issued so far and device failures injected, checked after each step
 * against a plain model of the coordinator and recipient words. The latch's last generation is low so
 * that chains run into exhaustion.
 */
class ValidationLatchChainTest {

    private static final int OWNERS = 4;
    private static final long MAX_GENERATION = 6;

    @Property(tries = 200)
    void theLatchFollowsTheModel(@ForAll("chains") ActionChain<World> chain) {
        chain.run();
    }

    @Provide
    Arbitrary<ActionChain<World>> chains() {
        Arbitrary<Integer> owner = Arbitraries.integers().between(0, OWNERS - 1);
        // 0 picks the latest token; anything else one issued earlier.
        Arbitrary<Integer> token = Arbitraries.frequencyOf(
                Tuple.of(3, Arbitraries.just(0)), Tuple.of(1, Arbitraries.integers().between(1, 20)));
        Arbitrary<Boolean> rarely = Arbitraries.integers().between(0, 5).map(n -> n == 0);
        return ActionChain.startWith(World::new)
                .withAction(2, action(Combinators.combine(owner, rarely).as((o, fail) -> Transformer.mutate(
                        "begin " + o + (fail ? " failing clear" : ""), w -> w.begin(o, fail)))))
                .withAction(3, action(Combinators.combine(owner, token, owner).as((s, t, r) -> Transformer.mutate(
                        "attach " + r + " by " + s + " token " + t, w -> w.attach(s, t, r)))))
                .withAction(2, action(Combinators.combine(owner, token).as((s, t) -> Transformer.mutate(
                        "activate by " + s + " token " + t, w -> w.activate(s, t)))))
                .withAction(3, action(Combinators.combine(owner, token, rarely).as((o, t, fail) -> Transformer.mutate(
                        "consume " + o + " token " + t + (fail ? " failing read" : ""), w -> w.consume(o, t, fail)))))
                .withAction(1, action(Combinators.combine(owner, rarely).as((o, fail) -> Transformer.mutate(
                        "unregister " + o + (fail ? " failing read" : ""), w -> w.unregister(o, fail)))))
                .withAction(2, action(Arbitraries.of(LatchFlags.OUT_OF_RANGE, LatchFlags.user(0), LatchFlags.user(23))
                        .map(bits -> Transformer.mutate("raise " + bits, w -> w.raise(bits)))))
                .withMaxTransformations(40);
    }

    private static Action.Independent<World> action(Arbitrary<Transformer<World>> transformers) {
        return () -> transformers;
    }

    private record Issued(long token, long generation) {
    }

    static final class World {
        final FakeLatchWord word = new FakeLatchWord();
        final ValidationLatch latch = new ValidationLatch(word, MAX_GENERATION);
        final List<ValidationRecipient> owners = new ArrayList<>();
        final List<Issued> issued = new ArrayList<>();

        // The model.
        ValidationPhase phase = ValidationPhase.IDLE;
        long generation;
        int submitter = -1;
        final Set<Integer> recipients = new HashSet<>();
        final RecipientState[] state = new RecipientState[OWNERS];
        final long[] joined = new long[OWNERS];
        final int[] flags = new int[OWNERS];
        int bits;
        long begun;
        long cleanups;
        long registered = OWNERS;

        World() {
            for (int o = 0; o < OWNERS; o++) {
                owners.add(latch.register("owner-" + o));
                state[o] = RecipientState.IDLE;
            }
        }

        void begin(int o, boolean failClear) {
            if (failClear) {
                word.failNextClears(1);
            }
            LatchMisuse misuse = null;
            boolean fails = false; // the last generation was used, or the clear fails
            if (phase != ValidationPhase.IDLE) {
                misuse = LatchMisuse.STILL_OPEN;
            } else if (generation >= MAX_GENERATION) {
                fails = true;
            } else {
                generation++; // reserved, and spent even if the begin fails from here on
                if (state[o] == RecipientState.RETIRED) {
                    misuse = LatchMisuse.UNREGISTERED;
                } else {
                    fails = failClear;
                }
            }
            if (misuse != null) {
                misuse.assertRefuses(() -> latch.begin(owners.get(o)));
            } else if (fails) {
                assertThrowsExactly(ValidationLatchException.class, () -> latch.begin(owners.get(o)));
            } else {
                issued.add(new Issued(latch.begin(owners.get(o)), generation));
                phase = ValidationPhase.PREPARING;
                submitter = o;
                recipients.clear();
                recipients.add(o);
                state[o] = RecipientState.PENDING;
                joined[o] = generation;
                bits = 0;
                begun++;
            }
            word.failNextClears(0);
            check();
        }

        void attach(int s, int pick, int r) {
            if (issued.isEmpty()) {
                return;
            }
            Issued token = pick(pick);
            LatchMisuse refusal = preparingRefusal(s, token.generation());
            if (refusal == null && state[r] == RecipientState.RETIRED) {
                refusal = LatchMisuse.UNREGISTERED;
            }
            run(refusal, () -> latch.attach(owners.get(s), token.token(), owners.get(r)));
            if (refusal == null && recipients.add(r)) {
                state[r] = RecipientState.PENDING;
                joined[r] = generation;
            }
            check();
        }

        void activate(int s, int pick) {
            if (issued.isEmpty()) {
                return;
            }
            Issued token = pick(pick);
            LatchMisuse refusal = preparingRefusal(s, token.generation());
            run(refusal, () -> latch.activate(owners.get(s), token.token()));
            if (refusal == null) {
                phase = ValidationPhase.ACTIVE;
            }
            check();
        }

        /** What attach and activate refuse with, or null when they may proceed. */
        private LatchMisuse preparingRefusal(int s, long tokenGeneration) {
            if (phase == ValidationPhase.PREPARING && tokenGeneration == generation) {
                return s == submitter ? null : LatchMisuse.NOT_SUBMITTER;
            }
            if (tokenGeneration < generation || phase == ValidationPhase.IDLE) {
                return LatchMisuse.STALE;
            }
            return LatchMisuse.ALREADY_ACTIVE;
        }

        void consume(int o, int pick, boolean failRead) {
            if (issued.isEmpty()) {
                return;
            }
            Issued token = pick(pick);
            long g = token.generation();
            if (failRead) {
                word.failNextReads(1);
            }
            if (state[o] == RecipientState.COMPLETE && joined[o] == g) {
                assertEquals(flags[o], latch.consume(owners.get(o), token.token()));
            } else if (state[o] == RecipientState.PENDING && joined[o] == g) {
                expectConsumption(failRead, () -> latch.consume(owners.get(o), token.token()));
            } else if (state[o] == RecipientState.RETIRED) {
                run(LatchMisuse.UNREGISTERED, () -> latch.consume(owners.get(o), token.token()));
            } else {
                LatchMisuse misuse = joined[o] > g ? LatchMisuse.STALE : LatchMisuse.NOT_RECIPIENT;
                run(misuse, () -> latch.consume(owners.get(o), token.token()));
            }
            word.failNextReads(0);
            check();
        }

        void unregister(int o, boolean failRead) {
            ValidationRecipient owner = owners.get(o);
            switch (state[o]) {
                case RETIRED -> run(LatchMisuse.UNREGISTERED, () -> latch.unregister(owner));
                case PENDING -> {
                    word.failNextReads(failRead ? 1 : 0);
                    // unregister returns nothing: the consumed flags are checked later through the
                    // other recipients' sticky results, and the read through the word's counts.
                    int consumed = bits;
                    expectConsumption(failRead, () -> {
                        latch.unregister(owner);
                        return consumed;
                    });
                    word.failNextReads(0);
                    if (!failRead) {
                        state[o] = RecipientState.RETIRED;
                        registered--;
                    }
                }
                default -> {
                    latch.unregister(owner);
                    state[o] = RecipientState.RETIRED;
                    registered--;
                }
            }
            check();
        }

        /** The owner's generation is consumed by {@code call}, or stays pending when the read fails. */
        private void expectConsumption(boolean failRead, IntSupplier call) {
            if (failRead) {
                assertThrowsExactly(ValidationLatchException.class, call::getAsInt);
                return;
            }
            int consumed = bits;
            assertEquals(consumed, call.getAsInt());
            for (int r : recipients) {
                state[r] = RecipientState.COMPLETE;
                flags[r] = consumed;
            }
            recipients.clear();
            submitter = -1;
            phase = ValidationPhase.IDLE;
            bits = 0;
            cleanups++;
        }

        void raise(int raised) {
            word.raise(raised);
            bits |= raised;
            check();
        }

        private Issued pick(int pick) {
            return pick == 0 ? issued.getLast() : issued.get(pick % issued.size());
        }

        private void run(LatchMisuse refusal, Runnable call) {
            if (refusal == null) {
                call.run();
            } else {
                refusal.assertRefuses(call::run);
            }
        }

        private void check() {
            assertEquals(phase, latch.phase());
            assertEquals(generation, latch.generation());
            assertEquals(new ValidationCounters(begun, cleanups, registered), latch.counters());
            assertEquals(bits, word.bits());
            assertEquals(begun, word.clears());
            assertEquals(cleanups, word.reads());
        }
    }
}
