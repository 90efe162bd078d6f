package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class GatunTest {

    @Test
    void theVersionIsTheMavenProjectVersionOfTheBuild() {
        // Surefire passes ${project.version} (runtime-core/pom.xml): the value Maven filtered in.
        String projectVersion = System.getProperty("gatun.test.projectVersion");
        assertNotNull(projectVersion, "run through Maven: surefire sets gatun.test.projectVersion");
        assertEquals(projectVersion, Gatun.version());
    }

    @Test
    void aResourceThatWasNotFilteredOrIsMissingGivesNoVersion() {
        assertNull(Gatun.versionIn(null));
        assertNull(Gatun.versionIn(text("version=${project.version}\n")));
        assertNull(Gatun.versionIn(text("# no version\n")));
        assertEquals("1.2.3", Gatun.versionIn(text("# build values\nversion = 1.2.3 \n")));
    }

    private static InputStream text(String properties) {
        return new ByteArrayInputStream(properties.getBytes(StandardCharsets.ISO_8859_1));
    }
}
