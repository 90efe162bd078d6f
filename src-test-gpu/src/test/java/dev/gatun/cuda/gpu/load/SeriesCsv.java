package dev.gatun.cuda.gpu.load;

import java.util.List;
import java.util.Locale;

/** Series sampled at the same instants as one CSV table: a seconds column, then one column per series. */
public final class SeriesCsv {

    private SeriesCsv() {
    }

    /**
     * @throws IllegalArgumentException when the series differ in their number of samples
     */
    public static String render(List<Series> series) {
        StringBuilder sb = new StringBuilder("seconds");
        int rows = series.isEmpty() ? 0 : series.getFirst().size();
        for (Series s : series) {
            if (s.size() != rows) {
                throw new IllegalArgumentException(s.name() + " has " + s.size() + " samples, " + series.getFirst().name()
                        + " has " + rows + "; a table needs series sampled together");
            }
            sb.append(',').append(s.name().replace(',', ' ')).append(" (").append(s.unit()).append(')');
        }
        sb.append('\n');
        for (int r = 0; r < rows; r++) {
            sb.append(String.format(Locale.ROOT, "%.3f", series.getFirst().seconds()[r]));
            for (Series s : series) {
                sb.append(',').append(String.format(Locale.ROOT, "%.0f", s.values()[r]));
            }
            sb.append('\n');
        }
        return sb.toString();
    }
}
