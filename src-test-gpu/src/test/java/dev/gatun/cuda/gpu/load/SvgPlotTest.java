package dev.gatun.cuda.gpu.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class SvgPlotTest {

    private static Document parse(String svg) throws Exception {
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setNamespaceAware(true);
        return factory.newDocumentBuilder().parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void everySeriesIsOnePolylineWithOnePointPerSampleInAWellFormedSvg() throws Exception {
        Series heap = new Series("JVM heap after GC", "MiB", 4);
        Series threads = new Series("threads <&> \"quoted\"", "threads", 0.5);
        Series flat = new Series("pinned owners", "owners", 1);
        for (int i = 0; i < 7; i++) {
            heap.add(10 * i, 100 + (i % 2));
            threads.add(10 * i, 20);
            flat.add(10 * i, 0);
        }
        Document doc = parse(SvgPlot.render("soak on a <test> GPU", List.of(heap, threads, flat), 30));
        Element root = doc.getDocumentElement();
        assertEquals("svg", root.getLocalName());
        assertEquals("http://www.w3.org/2000/svg", root.getNamespaceURI());
        NodeList lines = doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "polyline");
        assertEquals(3, lines.getLength());
        for (int i = 0; i < lines.getLength(); i++) {
            String[] points = ((Element) lines.item(i)).getAttribute("points").trim().split(" ");
            assertEquals(7, points.length);
            for (String p : points) {
                String[] xy = p.split(",");
                double x = Double.parseDouble(xy[0]);
                double y = Double.parseDouble(xy[1]);
                assertTrue(x >= 0 && x <= 900 && y >= 0 && y <= Double.parseDouble(root.getAttribute("height")), p);
            }
        }
        assertTrue(root.getTextContent().contains("threads <&> \"quoted\" (threads)"), "names escaped and kept");
    }

    @Test
    void aSeriesWithoutSamplesStillGivesAWellFormedDocument() throws Exception {
        Document doc = parse(SvgPlot.render("empty", List.of(new Series("a", "u", 1)), 0));
        assertEquals(1, doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "polyline").getLength());
    }
}
