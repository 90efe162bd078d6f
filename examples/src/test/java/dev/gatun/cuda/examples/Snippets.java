package dev.gatun.cuda.examples;

import java.util.ArrayList;
import java.util.List;

/**
 * The marked regions of the example programs and the code blocks of a Markdown file. A region
 * starts at a line {@code // snippet:NAME} and ends at the next {@code // end-snippet}; its
 * text is the lines between, shifted left by their common indentation.
 */
final class Snippets {

    private static final String START = "// snippet:";
    private static final String END = "// end-snippet";

    /** One marked region; {@code line} is the 1-based line of its start marker. */
    record Region(String name, String file, int line, String text) {
    }

    /** One fenced code block; {@code line} is the 1-based line of its opening fence. */
    record Block(int line, String text) {
    }

    private Snippets() {
    }

    /**
     * The regions of {@code source}, a file named {@code file} (for messages).
     *
     * @throws IllegalArgumentException for a region that is never closed, an end marker
     *     without a start, a region inside another, or a region without a name or text
     */
    static List<Region> regions(String file, String source) {
        List<Region> regions = new ArrayList<>();
        List<String> lines = source.lines().toList();
        String name = null;
        int start = 0;
        List<String> body = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            String at = file + ":" + (i + 1);
            if (line.startsWith(START)) {
                if (name != null) {
                    throw new IllegalArgumentException(at + ": snippet '" + line.substring(START.length())
                            + "' starts inside snippet '" + name + "' (line " + start + "); end that one first");
                }
                name = line.substring(START.length()).strip();
                if (name.isEmpty()) {
                    throw new IllegalArgumentException(at + ": a snippet needs a name: " + START + "NAME");
                }
                start = i + 1;
                body.clear();
            } else if (line.equals(END)) {
                if (name == null) {
                    throw new IllegalArgumentException(at + ": " + END + " without a " + START + "NAME before it");
                }
                if (body.stream().allMatch(String::isBlank)) {
                    throw new IllegalArgumentException(at + ": snippet '" + name + "' is empty");
                }
                regions.add(new Region(name, file, start, dedent(body)));
                name = null;
            } else if (name != null) {
                body.add(lines.get(i));
            }
        }
        if (name != null) {
            throw new IllegalArgumentException(file + ":" + start + ": snippet '" + name + "' is never closed; end it "
                    + "with a line " + END);
        }
        return regions;
    }

    /** The fenced blocks of {@code markdown} whose opening fence names {@code language}. */
    static List<Block> blocks(String markdown, String language) {
        List<Block> blocks = new ArrayList<>();
        List<String> lines = markdown.lines().toList();
        for (int i = 0; i < lines.size(); i++) {
            if (!lines.get(i).startsWith("```")) {
                continue;
            }
            int open = i;
            List<String> body = new ArrayList<>();
            for (i++; i < lines.size() && !lines.get(i).startsWith("```"); i++) {
                body.add(lines.get(i));
            }
            if (lines.get(open).substring(3).strip().equals(language)) {
                blocks.add(new Block(open + 1, String.join("\n", body)));
            }
        }
        return blocks;
    }

    private static String dedent(List<String> lines) {
        int indent = lines.stream().filter(l -> !l.isBlank()).mapToInt(Snippets::indentOf).min().orElse(0);
        List<String> out = new ArrayList<>();
        for (String l : lines) {
            out.add(l.isBlank() ? "" : l.substring(indent));
        }
        return String.join("\n", out);
    }

    private static int indentOf(String line) {
        int i = 0;
        while (i < line.length() && line.charAt(i) == ' ') {
            i++;
        }
        return i;
    }
}
