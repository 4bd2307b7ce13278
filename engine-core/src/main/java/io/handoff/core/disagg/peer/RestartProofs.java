package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.control.ControlMessage.ProcessAttestation;
import io.handoff.core.disagg.control.ControlMessage.ProcessQuery;
import io.handoff.core.disagg.control.PeerProcess;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * A decode's proofs that a lost prefill process is gone, taken from the prefill that replaced it (invariant I2: release
 * only on proof, never on a timer). When this decode reaches a prefill on the same host name as a lost one's, but another
 * process: with another kernel boot id, the host rebooted and every process of the old boot is gone; with the same boot,
 * the new prefill is asked whether the old pid (with its start time, as pids are reused) still runs, and only its answer
 * "gone" proves it. A prefill on another host proves nothing. Thread-safe. {@code L} is the caller's link.
 */
public final class RestartProofs<L>
{
    /** At most this many questions wait per link; beyond, a lost process stays unproven until a later link asks. */
    static final int MAX_QUESTIONS_PER_LINK = 256;

    /** What one lost process comes to. */
    public sealed interface Finding
    {
        PeerProcess lost();
    }

    /** {@code lost} is proven gone, by {@code proof}: its quarantined pages may be released. */
    public record Proven(PeerProcess lost, String proof)
            implements Finding {}

    /** The new prefill is asked {@code query} about {@code lost}; its answer comes to {@link #attested}. */
    public record Asked(PeerProcess lost, ProcessQuery query)
            implements Finding {}

    /** Nothing proves {@code lost} gone, for {@code why}: its pages stay quarantined. */
    public record Unproven(PeerProcess lost, String why)
            implements Finding {}

    private record Question(PeerProcess lost, PeerProcess asked) {}

    // link -> the lost processes its prefill was asked about, by pid and start time
    private final Map<L, Map<List<Long>, Question>> questions = new IdentityHashMap<>();

    /**
     * Prefill {@code reached} accepted this decode's hello on {@code link}; {@code lost} are the processes of failed links
     * whose rooms still hold quarantined pages. Returns what each lost process on {@code reached}'s host name comes to.
     */
    public synchronized List<Finding> reached(L link, PeerProcess reached, Collection<PeerProcess> lost)
    {
        requireNonNull(link, "link is null");
        requireNonNull(reached, "reached is null");
        List<Finding> findings = new ArrayList<>();
        if (!reached.known()) {
            return findings;
        }
        for (PeerProcess old : new LinkedHashSet<>(lost)) {
            if (!old.known() || !old.hostName().equals(reached.hostName()) || sameProcess(old, reached)) {
                continue;
            }
            findings.add(judge(link, reached, old));
        }
        return findings;
    }

    private Finding judge(L link, PeerProcess reached, PeerProcess old)
    {
        if (!old.hostId().equals(reached.hostId())) {
            if (old.bootId().isEmpty() || reached.bootId().isEmpty()) {
                return new Unproven(old, "host " + old.hostName() + " does not report a kernel boot id, so a restart cannot be told from "
                        + "a reboot");
            }
            return new Proven(old, "host " + old.hostName() + " rebooted (boot id " + old.bootId() + " is now " + reached.bootId()
                    + "): no process of the old boot runs");
        }
        if (old.startMillis() < 0) {
            return new Unproven(old, "it did not say when it started, so its pid cannot be told from a reused one");
        }
        Map<List<Long>, Question> asked = questions.computeIfAbsent(link, ignored -> new HashMap<>());
        if (asked.size() >= MAX_QUESTIONS_PER_LINK) {
            return new Unproven(old, "prefill " + reached + " has " + MAX_QUESTIONS_PER_LINK + " questions waiting already");
        }
        asked.put(List.of(old.pid(), old.startMillis()), new Question(old, reached));
        return new Asked(old, new ProcessQuery(old.pid(), old.startMillis()));
    }

    private static boolean sameProcess(PeerProcess a, PeerProcess b)
    {
        return a.hostId().equals(b.hostId()) && a.pid() == b.pid() && a.startMillis() == b.startMillis()
                && a.incarnation().equals(b.incarnation());
    }

    /**
     * The prefill on {@code link} answered a question: what it proves, or empty when this decode did not ask that link
     * about that process (the answer is ignored).
     */
    public synchronized Optional<Finding> attested(L link, ProcessAttestation attestation)
    {
        Map<List<Long>, Question> asked = questions.get(link);
        Question question = asked == null ? null : asked.remove(List.of(attestation.pid(), attestation.startMillis()));
        if (question == null) {
            return Optional.empty();
        }
        if (asked.isEmpty()) {
            questions.remove(link);
        }
        if (!attestation.gone()) {
            return Optional.of(new Unproven(question.lost(), "prefill " + question.asked() + " says process " + question.lost().pid()
                    + " may still run on its host"));
        }
        return Optional.of(new Proven(question.lost(), "prefill " + question.asked() + " attests that process " + question.lost().pid()
                + " (started at " + question.lost().startMillis() + " ms) no longer runs on " + question.lost().hostId()));
    }

    /** {@code link} failed: questions asked on it will not be answered. */
    public synchronized void forget(L link)
    {
        questions.remove(link);
    }
}
