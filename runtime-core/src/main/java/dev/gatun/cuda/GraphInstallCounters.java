package dev.gatun.cuda;

import java.util.Map;

/**
 * What an {@link UpdatingExecutable}'s (or a {@link GraphInstaller}'s) installs did: each new
 * graph was updated into the current executable in place, updated into the spare (which then
 * became current), or instantiated; and why the current executable refused each update that did
 * not apply, by reason.
 *
 * @param updates graphs updated into the current executable in place
 * @param spareUpdates graphs updated into the spare executable, which was swapped in
 * @param instantiations graphs instantiated anew (an {@code UpdatingExecutable}'s first one included;
 *     a {@code GraphInstaller} counts only its own)
 * @param refusals the current executable's refused updates, by reason
 * @param spareRefusals the spare's refused updates, by reason
 */
public record GraphInstallCounters(long updates, long spareUpdates, long instantiations,
        Map<GraphUpdateResult, Long> refusals, Map<GraphUpdateResult, Long> spareRefusals) {

    /** Copies the maps: a snapshot does not change. */
    public GraphInstallCounters {
        refusals = Map.copyOf(refusals);
        spareRefusals = Map.copyOf(spareRefusals);
    }
}
