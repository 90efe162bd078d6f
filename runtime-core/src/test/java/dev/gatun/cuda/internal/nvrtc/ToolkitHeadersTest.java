package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.internal.load.LibrarySearch.FileCheck;
import dev.gatun.cuda.testing.LogCapture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.event.Level;

class ToolkitHeadersTest {

    @TempDir
    Path temp;

    private static UnaryOperator<String> env(Map<String, String> values) {
        return values::get;
    }

    /** The real file system inside the test's directory; nothing outside it (this host may have a toolkit). */
    private FileCheck onlyUnderTemp() {
        return new FileCheck() {
            @Override
            public boolean isRegularFile(Path path) {
                return path.startsWith(temp) && Files.isRegularFile(path);
            }

            @Override
            public boolean isDirectory(Path path) {
                return path.startsWith(temp) && Files.isDirectory(path);
            }
        };
    }

    private Path toolkit(String name, String... headers) throws IOException {
        Path root = Files.createDirectories(temp.resolve(name));
        for (String header : headers) {
            Path file = root.resolve("include").resolve(header);
            Files.createDirectories(file.getParent());
            Files.writeString(file, "// " + header);
        }
        Files.createDirectories(root.resolve("include"));
        return root;
    }

    @Test
    void candidatesAreCudaHomeThenCudaPathThenTheDefaultWithoutDuplicates() {
        assertEquals(List.of(Path.of("/opt/a/include"), Path.of("/opt/b/include"), Path.of("/usr/local/cuda/include")),
                ToolkitHeaders.candidates(env(Map.of("CUDA_HOME", "/opt/a", "CUDA_PATH", "/opt/b"))));
        assertEquals(List.of(Path.of("/opt/a/include"), Path.of("/usr/local/cuda/include")),
                ToolkitHeaders.candidates(env(Map.of("CUDA_HOME", "/opt/a/", "CUDA_PATH", "/opt/a"))));
        assertEquals(List.of(Path.of("/usr/local/cuda/include")),
                ToolkitHeaders.candidates(env(Map.of("CUDA_HOME", "/usr/local/cuda", "CUDA_PATH", "  "))));
    }

    @Test
    void aRelativeCudaHomeOrCudaPathIsRefusedNotResolvedAgainstTheWorkingDirectory() {
        LogCapture.clear();
        assertEquals(List.of(Path.of("/opt/b/include"), Path.of("/usr/local/cuda/include")),
                ToolkitHeaders.candidates(env(Map.of("CUDA_HOME", "toolkit", "CUDA_PATH", "/opt/b"))));
        LogCapture.expect(Level.WARN, ToolkitHeaders.class, "CUDA_HOME", "toolkit is not an absolute path",
                "set CUDA_HOME to an absolute path");
        assertEquals(List.of(Path.of("/usr/local/cuda/include")),
                ToolkitHeaders.candidates(env(Map.of("CUDA_PATH", "./cuda"))));
        LogCapture.expect(Level.WARN, ToolkitHeaders.class, "CUDA_PATH", "./cuda is not an absolute path");
    }

    @Test
    void keepsOnlyDirectoriesHoldingCudaFp16OrCrtMma() throws IOException {
        Path fp16 = toolkit("fp16", "cuda_fp16.h");
        Path mma = toolkit("mma", "crt/mma.h");
        List<Path> found = ToolkitHeaders.discover(
                env(Map.of("CUDA_HOME", fp16.toString(), "CUDA_PATH", mma.toString())), onlyUnderTemp());
        assertEquals(List.of(fp16.resolve("include"), mma.resolve("include")), found);
    }

    @Test
    void cuda13sCcclDirectoryFollowsItsToolkitWhenItHoldsLibcuxx() throws IOException {
        Path cuda13 = toolkit("cuda13", "cuda_fp16.h", "cccl/cuda/std/type_traits");
        Path noStd = toolkit("nostd", "cuda_fp16.h", "cccl/thrust/version.h");
        assertEquals(List.of(cuda13.resolve("include"), cuda13.resolve("include/cccl"), noStd.resolve("include")),
                ToolkitHeaders.discover(env(Map.of("CUDA_HOME", cuda13.toString(), "CUDA_PATH", noStd.toString())),
                        onlyUnderTemp()));
    }

    @Test
    void dropsDirectoriesWithoutEitherHeader() throws IOException {
        Path empty = toolkit("empty", "cuda_runtime.h", "mma.h");
        Path headerIsADirectory = toolkit("odd");
        Files.createDirectories(headerIsADirectory.resolve("include/cuda_fp16.h"));
        assertEquals(List.of(), ToolkitHeaders.discover(
                env(Map.of("CUDA_HOME", empty.toString(), "CUDA_PATH", headerIsADirectory.toString())),
                onlyUnderTemp()));
    }

    @Test
    void theDefaultLocationIsCheckedToo() {
        FileCheck onlyDefault = new FileCheck() {
            @Override
            public boolean isRegularFile(Path path) {
                return path.equals(Path.of("/usr/local/cuda/include/cuda_fp16.h"));
            }

            @Override
            public boolean isDirectory(Path path) {
                return false;
            }
        };
        assertEquals(List.of(Path.of("/usr/local/cuda/include")), ToolkitHeaders.discover(env(Map.of()), onlyDefault));
    }
}
