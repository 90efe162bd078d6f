package dev.gatun.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The naming rules of the public API ({@code dev.gatun.cuda}'s package comment, "One naming"),
 * checked on an API listing as {@code bom/src/build/ApiListing.java} writes it ({@code api/*.api}:
 * each type a user can reach as {@code javap -protected} prints it). A listing names no record
 * component, so the caller says which accessors of a record are its components (by reflection
 * where the type is on the class path).
 */
final class ApiNaming {

    /** One name that breaks a rule. */
    record Violation(String type, String member, String rule) {

        @Override
        public String toString() {
            return type + "." + member + ": " + rule;
        }
    }

    /** What a member of a type is. */
    enum Kind { METHOD, FIELD, CONSTRUCTOR }

    /** One member of a type, as the listing prints it ({@code returns}: a field's type; empty for a constructor). */
    record Member(Kind kind, String name, String returns, List<String> parameters, boolean isStatic) {

        @Override
        public String toString() {
            return kind == Kind.FIELD ? name : name + "(" + String.join(", ", parameters) + ")";
        }
    }

    /** One type of the listing: its binary name, kind and members. */
    record Type(String name, boolean isRecord, boolean isEnum, List<Member> members) {

        String simpleName() {
            return name.substring(Math.max(name.lastIndexOf('.'), name.lastIndexOf('$')) + 1);
        }
    }

    /** CUDA counts threads and blocks in "block size" and "grid size": not bytes. */
    static final Set<String> THREAD_AND_BLOCK_SIZES = Set.of("blockSize", "minGridSize", "suggestBlockSize");
    /**
     * Boolean methods that act and report how it went, rather than answer a question (a static
     * method acts on its arguments: {@code Gatun.readFlag}).
     */
    static final Set<String> VERBS = Set.of("equals", "query", "reset", "update", "unload", "supportsParameter");
    /**
     * Words for a quantity held now, or its most: a component named by one of them is a count (of
     * bytes or of things), so its name ends in a plural ({@code liveBytes}, {@code mappedChunks}).
     */
    static final List<String> STATES = List.of("live", "retained", "reserved", "mapped", "used", "peak", "pending",
            "free", "total", "trimmed", "requested");
    /** Words naming a choice among the driver's values, which an enum carries. */
    static final Pattern DRIVER_CHOICE = Pattern.compile("(?i).*(attribute|flag|mode|policy|kind|type|condition|access)s?$");
    /** {@code CudaException.result()}: the driver's result number, beside its name; no enum lists them. */
    static final Set<String> DRIVER_NUMBERS = Set.of("dev.gatun.cuda.CudaException.result");

    private static final Pattern TYPE = Pattern.compile(
            "^(?:public|protected) .*?\\b(class|interface) ([\\w.$]+)(?:<[^{]*?>)?(.*)\\{$");
    private static final Pattern MEMBER = Pattern.compile("^\\s+(?:public|protected) (.*);$");

    private ApiNaming() {
    }

    /** The types of a listing, in its order. */
    static List<Type> parse(String listing) {
        List<Type> types = new ArrayList<>();
        String name = null;
        boolean isRecord = false;
        boolean isEnum = false;
        List<Member> members = null;
        for (String line : listing.split("\n")) {
            Matcher t = TYPE.matcher(line);
            if (name == null && t.matches()) {
                name = t.group(2);
                isRecord = t.group(3).contains("extends java.lang.Record");
                isEnum = t.group(3).contains("extends java.lang.Enum<");
                members = new ArrayList<>();
            } else if (name != null && line.equals("}")) {
                types.add(new Type(name, isRecord, isEnum, List.copyOf(members)));
                name = null;
            } else if (name != null) {
                Matcher m = MEMBER.matcher(line);
                if (m.matches()) {
                    members.add(member(m.group(1), name));
                }
            }
        }
        return types;
    }

    private static Member member(String text, String type) {
        String declaration = text.replaceAll(" throws .*$", "").replaceAll(" = .*$", "");
        boolean isStatic = declaration.startsWith("static ") || declaration.contains(" static ");
        int open = declaration.indexOf('(');
        if (open < 0) { // a field: modifiers, type, name
            String name = declaration.substring(declaration.lastIndexOf(' ') + 1);
            String head = declaration.substring(0, declaration.lastIndexOf(' '));
            return new Member(Kind.FIELD, name, head.substring(head.lastIndexOf(' ') + 1), List.of(), isStatic);
        }
        String head = declaration.substring(0, open);
        String inside = declaration.substring(open + 1, declaration.lastIndexOf(')'));
        List<String> parameters = inside.isBlank() ? List.of() : splitTopLevel(inside);
        String name = head.substring(head.lastIndexOf(' ') + 1);
        if (name.equals(type)) {
            return new Member(Kind.CONSTRUCTOR, name, "", parameters, false);
        }
        String rest = head.substring(0, head.length() - name.length()).strip()
                .replaceAll("^((static|final|abstract|default|synchronized|native) )+", "");
        return new Member(Kind.METHOD, name, rest.replaceAll("^<[^>]*> ", ""), parameters, isStatic);
    }

    /** Splits a parameter list at its commas outside generic brackets. */
    private static List<String> splitTopLevel(String list) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < list.length(); i++) {
            char c = list.charAt(i);
            if (c == '<') {
                depth++;
            } else if (c == '>') {
                depth--;
            } else if (c == ',' && depth == 0) {
                parts.add(list.substring(start, i).strip());
                start = i + 1;
            }
        }
        parts.add(list.substring(start).strip());
        return parts;
    }

    /**
     * Every name of {@code types} that breaks a rule.
     *
     * @param components a record's component names, where they are known; otherwise every accessor
     *     of a record counts as one
     */
    static List<Violation> check(List<Type> types, Function<Type, Optional<Set<String>>> components) {
        List<Violation> found = new ArrayList<>();
        for (Type t : types) {
            if (t.simpleName().matches(".*(Counts|Stats|Statistics|Metrics)$")) {
                found.add(new Violation(t.name(), "(type)", "a snapshot of counts is a record named *Counters"));
            }
            Set<String> known = t.isRecord() ? components.apply(t).orElse(null) : Set.of();
            for (Member m : t.members()) {
                if (m.kind() != Kind.METHOD) {
                    continue; // constructors are the type's name; constants are the driver's or a property's
                }
                boolean component = known == null ? t.isRecord() && m.parameters().isEmpty() && !m.isStatic()
                        : known.contains(m.name());
                for (String rule : broken(t, m, component)) {
                    found.add(new Violation(t.name(), m.toString(), rule));
                }
            }
        }
        return found;
    }

    /** The rules method {@code m} of {@code t} breaks; {@code component}: it reads a record's component. */
    static List<String> broken(Type t, Member m, boolean component) {
        String n = m.name();
        String returns = m.returns();
        boolean accessor = m.parameters().isEmpty() && !m.isStatic();
        List<String> rules = new ArrayList<>();
        if (n.matches("bytes[A-Z].*")) {
            rules.add("a count of bytes ends in Bytes (xBytes), never starts with it");
        }
        if (n.toLowerCase(Locale.ROOT).endsWith("length")) {
            rules.add("the size of a thing in bytes is byteSize()");
        }
        if (n.equals("byteSize") && !returns.equals("long")) {
            rules.add("byteSize() is a long");
        }
        if (n.equals("size") && !returns.equals("int")) {
            rules.add("size() counts items (an int); a size in bytes is byteSize()");
        }
        if (n.endsWith("Size") && !n.equals("byteSize") && !THREAD_AND_BLOCK_SIZES.contains(n)) {
            rules.add("a size in bytes is byteSize(), a count of bytes xBytes");
        }
        if (n.contains("HighWater") || n.matches(".*[a-z](Current|High)$")) {
            rules.add("the most a quantity was is peakX; what it is now needs no word");
        }
        if (n.startsWith("with") && n.length() > 4 && t.members().stream().anyMatch(o -> o.parameters().isEmpty()
                && o.name().equals(Character.toLowerCase(n.charAt(4)) + n.substring(5) + "Bytes"))) {
            rules.add("a wither names the count of bytes it sets (withXBytes)");
        }
        if (returns.equals("boolean") && !component && !m.isStatic() && !VERBS.contains(n)
                && !n.matches("(is|has|can)[A-Z].*")) {
            rules.add("a question is isX, hasX or canX");
        }
        if (accessor && (returns.equals("long") || returns.equals("int")) && !n.endsWith("s")
                && STATES.stream().anyMatch(s -> n.equals(s) || n.startsWith(s) && Character.isUpperCase(n.charAt(s.length())))) {
            rules.add("a quantity named by its state (live, reserved, peak, ...) is a count, named by a plural "
                    + "(xBytes, xAllocations)");
        }
        if (returns.matches("[\\w.$]*(Counters|Counts)") && !n.equals("counters") && !n.endsWith("Counters")) {
            rules.add("counters are read with counters(), or xCounters() where a view reads several");
        }
        boolean choice = DRIVER_CHOICE.matcher(n).matches()
                || n.startsWith("set") && n.length() > 3 && DRIVER_CHOICE.matcher(n.substring(3)).matches();
        if (choice && !DRIVER_NUMBERS.contains(t.name() + "." + n) && !t.isEnum()
                && (!m.parameters().isEmpty() && m.parameters().getFirst().equals("int")
                        || accessor && returns.equals("int") && !component)) {
            rules.add("a choice among the driver's values is an enum that carries the value, never an int");
        }
        if (accessor && returns.equals("java.lang.String") && n.matches("(?i).*(state|kind|mode|type|phase|policy)$")) {
            rules.add("a state or kind is an enum, not a String");
        }
        return rules;
    }
}
