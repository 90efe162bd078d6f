package dev.gatun.cuda.graph;

import dev.gatun.cuda.GraphExec;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A named group of graph slots, keyed by slot name: the slots of one executor, session or model
 * instance, retired together. Graph lifecycles are keyed by (group, slot). Slots are created on
 * first use; {@link #retire()} drops every slot of the group at once.
 */
public final class SlotGroup {

    private final GraphLifecycles lifecycles;
    private final String name;
    private final ConcurrentHashMap<String, GraphSlot> slots = new ConcurrentHashMap<>();
    /** Serializes slot creation with retirement. */
    private final ReentrantLock lock = new ReentrantLock();
    private volatile boolean retired;

    SlotGroup(GraphLifecycles lifecycles, String name) {
        this.lifecycles = lifecycles;
        this.name = name;
    }

    /** {@return the group's name, as registered} */
    public String name() {
        return name;
    }

    /** {@return whether the group was retired}: its slots then neither capture nor replay. */
    public boolean isRetired() {
        return retired;
    }

    /**
     * The slot called {@code slotName}, created IDLE on first use. Finding an existing slot takes
     * no lock, so a caller may look its slot up on every request instead of keeping it.
     *
     * @param slotName the slot's name, unique in this group
     * @return the slot of that name, new or existing
     * @throws IllegalStateException when the group has been retired
     * @throws IllegalArgumentException when {@code slotName} is blank
     */
    public GraphSlot slot(String slotName) {
        Objects.requireNonNull(slotName, "slotName");
        GraphSlot existing = slots.get(slotName);
        if (existing != null && !retired) {
            return existing;
        }
        lock.lock();
        try {
            if (retired) {
                throw new IllegalStateException("group '" + name + "' was retired, so its slot '" + slotName
                        + "' is gone; register a new group");
            }
            Names.require(slotName, "slot name");
            return slots.computeIfAbsent(slotName,
                    key -> new GraphSlot(this, key));
        } finally {
            lock.unlock();
        }
    }

    /** {@return the counters summed over this group's slots} */
    public GraphCounters counters() {
        GraphCounters sum = GraphCounters.ZERO;
        for (GraphSlot slot : slots.values()) {
            sum = sum.plus(slot.counters());
        }
        return sum;
    }

    /**
     * Retires every slot of this group at once: each drops its segments (their executables are
     * closed, so retirement destroys each after its last launch) and refuses every later operation.
     * Idempotent.
     *
     * @throws IllegalStateException when one of the slots is capturing; nothing is retired then (end
     *     or abort that capture first)
     */
    public void retire() {
        List<GraphExec> dropped = new ArrayList<>();
        lock.lock();
        try {
            if (retired) {
                return;
            }
            List<GraphSlot> all = List.copyOf(slots.values());
            int locked = 0;
            try {
                // All slot locks at once, so that no capture can open between the check and the
                // retirement. Nothing else holds two slot locks, so the order cannot deadlock.
                for (GraphSlot slot : all) {
                    slot.mutationLock().lock();
                    locked++;
                }
                for (GraphSlot slot : all) {
                    if (slot.capturingLocked()) {
                        throw new IllegalStateException("group '" + name + "': cannot retire while slot '"
                                + slot.name() + "' is capturing; end or abort that capture first. Nothing was retired");
                    }
                }
                retired = true;
                for (GraphSlot slot : all) {
                    dropped.addAll(slot.retireLocked());
                }
            } finally {
                for (int i = 0; i < locked; i++) {
                    all.get(i).mutationLock().unlock();
                }
            }
            lifecycles.groupRetired(this);
        } finally {
            lock.unlock();
        }
        GraphSlot.closeAll(dropped);
    }

    @Override
    public String toString() {
        return "SlotGroup[" + name + (retired ? ", retired]" : ", " + slots.size() + " slot(s)]");
    }
}
