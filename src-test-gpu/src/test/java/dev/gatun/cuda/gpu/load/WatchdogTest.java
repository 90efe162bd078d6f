package dev.gatun.cuda.gpu.load;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

class WatchdogTest {

    @Test
    void finishedWorkersPass() {
        assertDoesNotThrow(() -> Watchdog.await(List.of(CompletableFuture.completedFuture(1),
                CompletableFuture.completedFuture(2)), Duration.ofSeconds(1)));
    }

    @Test
    void aWorkerThatNeverFinishesFailsWithEveryThreadsStackIncludingWhereItWaits() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor(r -> new Thread(r, "stuck-worker"));
        try {
            var stuck = pool.submit(() -> {
                never.await(); // released only after the assertion below
                return null;
            });
            AssertionError e = assertThrows(AssertionError.class,
                    () -> Watchdog.await(List.of(CompletableFuture.completedFuture(0), stuck), Duration.ofMillis(200)));
            String message = e.getMessage();
            assertTrue(message.startsWith("worker 1 of 2 has not finished within PT0.2S"), message);
            assertTrue(message.contains("\"stuck-worker\""), message);
            assertTrue(message.contains("java.util.concurrent.CountDownLatch.await("), message);
            assertTrue(message.contains("\"" + Thread.currentThread().getName() + "\""), "the waiting thread too");
        } finally {
            never.countDown();
            pool.shutdown();
        }
    }

    @Test
    void aWorkerThatThrewFailsWithItsException() {
        IllegalStateException boom = new IllegalStateException("boom");
        AssertionError e = assertThrows(AssertionError.class,
                () -> Watchdog.await(List.of(CompletableFuture.failedFuture(boom)), Duration.ofSeconds(1)));
        assertSame(boom, e.getCause());
    }
}
