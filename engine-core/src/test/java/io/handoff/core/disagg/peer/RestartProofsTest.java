package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.ProcessAttestation;
import io.handoff.core.disagg.control.ControlMessage.ProcessQuery;
import io.handoff.core.disagg.control.PeerProcess;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A decode's proof that a restarted prefill's predecessor is gone: another boot of the same host proves it at once; on the
 * same boot only the new prefill's attestation about the old pid and start time does; nothing else releases anything.
 */
class RestartProofsTest
{
    private static final String LINK = "link-to-the-new-prefill";
    private static final PeerProcess OLD = new PeerProcess("prefill-host/boot-a", 4242, 1_000, "old-incarnation");
    private static final PeerProcess NEW = new PeerProcess("prefill-host/boot-a", 5151, 2_000, "new-incarnation");

    private final RestartProofs<String> proofs = new RestartProofs<>();

    @Test
    void aNewIncarnationOnTheSameBootIsAskedAboutTheOldPidAndItsStartTime()
    {
        assertThat(proofs.reached(LINK, NEW, List.of(OLD, OLD)))
                .containsExactly(new RestartProofs.Asked(OLD, new ProcessQuery(4242, 1_000)));
    }

    @Test
    void anAttestationThatTheOldPidIsGoneProvesIt()
    {
        proofs.reached(LINK, NEW, List.of(OLD));

        RestartProofs.Finding finding = proofs.attested(LINK, new ProcessAttestation(4242, 1_000, true)).orElseThrow();

        assertThat(finding).isInstanceOf(RestartProofs.Proven.class);
        assertThat(finding.lost()).isEqualTo(OLD);
        assertThat(((RestartProofs.Proven) finding).proof()).contains("attests that process 4242").contains("no longer runs");
        // answered once: the same answer again is not a second proof
        assertThat(proofs.attested(LINK, new ProcessAttestation(4242, 1_000, true))).isEmpty();
    }

    @Test
    void anAttestationThatTheOldPidMayRunProvesNothing()
    {
        proofs.reached(LINK, NEW, List.of(OLD));

        RestartProofs.Finding finding = proofs.attested(LINK, new ProcessAttestation(4242, 1_000, false)).orElseThrow();

        assertThat(finding).isInstanceOf(RestartProofs.Unproven.class);
        assertThat(((RestartProofs.Unproven) finding).why()).contains("may still run");
    }

    @Test
    void anotherBootOfTheSameHostProvesTheOldProcessGoneWithoutAQuestion()
    {
        PeerProcess rebooted = new PeerProcess("prefill-host/boot-b", 4242, 9_000, "after-reboot");

        List<RestartProofs.Finding> findings = proofs.reached(LINK, rebooted, List.of(OLD));

        assertThat(findings).hasSize(1).first().isInstanceOf(RestartProofs.Proven.class);
        assertThat(((RestartProofs.Proven) findings.getFirst()).proof()).contains("rebooted").contains("boot-a").contains("boot-b");
        assertThat(proofs.attested(LINK, new ProcessAttestation(4242, 1_000, true))).isEmpty();
    }

    @Test
    void anAttestationNobodyAskedForIsIgnored()
    {
        proofs.reached(LINK, NEW, List.of(OLD));

        // another pid, the asked pid with another start time (a reused pid), and the right answer on another link
        assertThat(proofs.attested(LINK, new ProcessAttestation(4243, 1_000, true))).isEmpty();
        assertThat(proofs.attested(LINK, new ProcessAttestation(4242, 1_001, true))).isEmpty();
        assertThat(proofs.attested("another-link", new ProcessAttestation(4242, 1_000, true))).isEmpty();
        // the question is still open for its own link
        assertThat(proofs.attested(LINK, new ProcessAttestation(4242, 1_000, true))).get().isInstanceOf(RestartProofs.Proven.class);
    }

    @Test
    void aFailedLinkAnswersNothing()
    {
        proofs.reached(LINK, NEW, List.of(OLD));
        proofs.forget(LINK);

        assertThat(proofs.attested(LINK, new ProcessAttestation(4242, 1_000, true))).isEmpty();
    }

    @Test
    void aPrefillOnAnotherHostOrTheSameProcessAgainSaysNothing()
    {
        PeerProcess elsewhere = new PeerProcess("other-host/boot-z", 4242, 1_000, "elsewhere");
        PeerProcess reconnected = new PeerProcess(OLD.hostId(), OLD.pid(), OLD.startMillis(), OLD.incarnation());

        assertThat(proofs.reached(LINK, elsewhere, List.of(OLD))).isEmpty();
        assertThat(proofs.reached(LINK, reconnected, List.of(OLD))).isEmpty();
    }

    @Test
    void withoutABootIdOrAStartTimeThereIsNoProof()
    {
        PeerProcess noBoot = new PeerProcess("prefill-host", 4242, 1_000, "old");
        PeerProcess noStart = new PeerProcess("prefill-host/boot-a", 4242, ControlMessage.HelloResult.UNKNOWN_START, "old");

        assertThat(proofs.reached(LINK, NEW, List.of(noBoot))).singleElement().isInstanceOf(RestartProofs.Unproven.class);
        assertThat(proofs.reached(LINK, NEW, List.of(noStart))).singleElement().isInstanceOf(RestartProofs.Unproven.class);
    }
}
