package dev.gatun.cuda.gpu.load;

import java.util.List;
import java.util.Locale;

/**
 * Draws series as an SVG document, one panel per series stacked vertically (each with its own
 * value axis, since their units differ), each series one polyline, with a dashed line where
 * warm-up ends. Hand-written SVG: a browser shows it, and no plotting library is needed.
 */
public final class SvgPlot {

    private static final int WIDTH = 900;
    private static final int PANEL_HEIGHT = 150;
    private static final int LEFT = 90;
    private static final int RIGHT = 20;
    private static final int TOP = 40;
    private static final int GAP = 40;

    private SvgPlot() {
    }

    /** The SVG text for {@code series} sampled over a run, with warm-up ending at {@code warmupSeconds}. */
    public static String render(String title, List<Series> series, double warmupSeconds) {
        int height = TOP + series.size() * (PANEL_HEIGHT + GAP);
        double endSeconds = warmupSeconds;
        for (Series s : series) {
            double[] t = s.seconds();
            if (t.length > 0) {
                endSeconds = Math.max(endSeconds, t[t.length - 1]);
            }
        }
        double span = endSeconds > 0 ? endSeconds : 1;
        int plotWidth = WIDTH - LEFT - RIGHT;
        StringBuilder sb = new StringBuilder();
        sb.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", WIDTH, height, WIDTH, height));
        sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>\n", LEFT, escape(title)));
        for (int p = 0; p < series.size(); p++) {
            Series s = series.get(p);
            int top = TOP + p * (PANEL_HEIGHT + GAP) + 16;
            int bottom = top + PANEL_HEIGHT - 16;
            double[] t = s.seconds();
            double[] v = s.values();
            double min = Double.POSITIVE_INFINITY;
            double max = Double.NEGATIVE_INFINITY;
            for (double value : v) {
                min = Math.min(min, value);
                max = Math.max(max, value);
            }
            if (v.length == 0) {
                min = 0;
                max = 1;
            }
            if (max == min) { // a flat line sits mid-panel
                min -= 1;
                max += 1;
            }
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s (%s)</text>\n", LEFT, top - 4,
                    escape(s.name()), escape(s.unit())));
            sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                    + "stroke=\"#999\"/>\n", LEFT, top, plotWidth, bottom - top));
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", LEFT - 4,
                    top + 10, number(max)));
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", LEFT - 4,
                    bottom, number(min)));
            double warmX = LEFT + plotWidth * Math.min(1, warmupSeconds / span);
            sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c60\" "
                    + "stroke-dasharray=\"4 3\"/>\n", warmX, top, warmX, bottom));
            sb.append("<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\" points=\"");
            for (int i = 0; i < v.length; i++) {
                double x = LEFT + plotWidth * (t[i] / span);
                double y = bottom - (bottom - top) * (v[i] - min) / (max - min);
                sb.append(String.format(Locale.ROOT, "%s%.1f,%.1f", i == 0 ? "" : " ", x, y));
            }
            sb.append("\"/>\n");
        }
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">0 s</text>\n", LEFT, height - 6));
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s s (dashed: end of warm-up)</text>\n",
                WIDTH - RIGHT, height - 6, number(endSeconds)));
        sb.append("</svg>\n");
        return sb.toString();
    }

    private static String number(double value) {
        return String.format(Locale.ROOT, "%.4g", value);
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
