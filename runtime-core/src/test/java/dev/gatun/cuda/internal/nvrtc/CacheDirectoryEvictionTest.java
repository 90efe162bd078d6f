package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which entries eviction picks: least recently used first, never the one just written, never through a link. */
class CacheDirectoryEvictionTest {

    private static final String OLDEST = "a".repeat(64);
    private static final String MIDDLE = "b".repeat(64);
    private static final String NEWEST = "c".repeat(64);
    private static final String WRITTEN = "d".repeat(64);

    @TempDir
    Path temp;

    private CacheDirectory dir;

    /** Four entries of 100 bytes; their last uses set explicitly, in 2020, so no clock is raced. */
    @BeforeEach
    void fourEntries() throws IOException {
        dir = new CacheDirectory(temp.resolve("kernels"));
        usedAt(OLDEST, "2020-01-01T00:00:00Z");
        usedAt(MIDDLE, "2020-01-02T00:00:00Z");
        usedAt(NEWEST, "2020-01-03T00:00:00Z");
        dir.write(WRITTEN, new byte[100]);
    }

    private void usedAt(String key, String instant) throws IOException {
        dir.write(key, new byte[100]);
        Files.setLastModifiedTime(dir.entry(key), FileTime.from(Instant.parse(instant)));
    }

    private List<Path> victims(long maxBytes) throws IOException {
        return dir.evictionVictims(maxBytes, WRITTEN).stream().map(CacheDirectory.Listed::path).toList();
    }

    @Test
    void underTheCapNothingIsAVictim() throws IOException {
        assertEquals(List.of(), victims(400));
    }

    @Test
    void theLeastRecentlyUsedGoFirstAndOnlyAsManyAsNeeded() throws IOException {
        assertEquals(List.of(dir.entry(OLDEST)), victims(300));
        assertEquals(List.of(dir.entry(OLDEST), dir.entry(MIDDLE)), victims(250));
    }

    @Test
    void aHitMakesAnEntryTheMostRecentlyUsed() throws IOException {
        dir.markUsed(OLDEST);
        assertEquals(List.of(dir.entry(MIDDLE), dir.entry(NEWEST)), victims(200));
    }

    @Test
    void theEntryJustWrittenIsKeptEvenWhenItAloneIsOverTheCap() throws IOException {
        Files.setLastModifiedTime(dir.entry(WRITTEN), FileTime.from(Instant.parse("2019-01-01T00:00:00Z")));
        assertEquals(List.of(dir.entry(OLDEST), dir.entry(MIDDLE), dir.entry(NEWEST)), victims(1));
    }

    @Test
    void aLinkNamedAsAnEntryIsNeitherCountedNorDeletedNorFollowed() throws IOException {
        Path outside = Files.write(temp.resolve("precious"), new byte[1000]);
        Path link = Files.createSymbolicLink(dir.root().resolve("e".repeat(64) + ".entry"), outside);
        Files.write(dir.root().resolve("f".repeat(64) + ".entry.tmp"), new byte[1000]); // a writer at work
        assertEquals(List.of(), victims(400), "the link's target and the temporary file are not counted");
        for (CacheDirectory.Listed victim : dir.evictionVictims(1, WRITTEN)) {
            assertTrue(dir.delete(victim));
        }
        assertTrue(Files.isSymbolicLink(link));
        assertEquals(1000, Files.size(outside));
        assertTrue(Files.exists(dir.entry(WRITTEN)));
        assertFalse(Files.exists(dir.entry(OLDEST), LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void deletingAnEntryReplacedByALinkRemovesTheLinkNotItsTarget() throws IOException {
        CacheDirectory.Listed victim = dir.evictionVictims(300, WRITTEN).getFirst();
        Path outside = Files.write(temp.resolve("precious"), new byte[10]);
        Files.delete(victim.path());
        Files.createSymbolicLink(victim.path(), outside);
        assertTrue(dir.delete(victim));
        assertFalse(Files.exists(victim.path(), LinkOption.NOFOLLOW_LINKS));
        assertEquals(10, Files.size(outside));
        assertFalse(dir.delete(victim), "gone already: another process evicted it");
    }

    @Test
    void markingAnEntryUsedDoesNotFollowALink() throws IOException {
        Path outside = Files.write(temp.resolve("precious"), new byte[10]);
        FileTime old = FileTime.from(Instant.parse("2020-01-01T00:00:00Z"));
        Files.setLastModifiedTime(outside, old);
        Files.delete(dir.entry(OLDEST));
        Files.createSymbolicLink(dir.entry(OLDEST), outside);
        dir.markUsed(OLDEST);
        assertEquals(old, Files.getLastModifiedTime(outside));
    }
}
