package dev.gatun.cuda.bench;

/** Whether a row met its goal, with the reason when it did not or could not tell. */
public record Verdict(State state, String reason) {

    /** Ordered from best to worst: combining two verdicts keeps the worse. */
    public enum State {
        NO_GOAL, NOT_RUN, MET, UNDECIDED, MISSED
    }

    static Verdict none() {
        return new Verdict(State.NO_GOAL, "");
    }

    static Verdict met() {
        return new Verdict(State.MET, "");
    }

    static Verdict missed(String reason) {
        return new Verdict(State.MISSED, reason);
    }

    static Verdict undecided(String reason) {
        return new Verdict(State.UNDECIDED, reason);
    }

    /** The row could not run on this machine (a library it needs is missing). */
    static Verdict notRun(String reason) {
        return new Verdict(State.NOT_RUN, reason);
    }

    /** Both verdicts of a row (its time goal and its B/op goal) as one: the worse, with both reasons. */
    Verdict and(Verdict other) {
        State worse = state.compareTo(other.state) >= 0 ? state : other.state;
        String both = reason.isEmpty() ? other.reason : other.reason.isEmpty() ? reason : reason + "; " + other.reason;
        return new Verdict(worse, both);
    }

    /** The table's cell: {@code yes}, {@code NO: why}, {@code undecided: why}, {@code not run: why}, or empty. */
    String cell() {
        return switch (state) {
            case NO_GOAL -> "";
            case NOT_RUN -> "not run: " + reason;
            case MET -> "yes";
            case UNDECIDED -> "undecided: " + reason;
            case MISSED -> "NO: " + reason;
        };
    }
}
