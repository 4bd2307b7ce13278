package io.handoff.core.http;

import io.handoff.core.demo.ColocatedReference;
import io.handoff.core.demo.DemoReport;
import io.handoff.core.demo.RequestResult;
import io.handoff.core.demo.ServerFigures;
import io.handoff.core.demo.StreamingClient;
import io.handoff.core.demo.Workload;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's comparison path end to end against a real server: the streaming client through the HTTP API
 * and the colocated reference on the scheduler must agree on every token, since both are the same engine.
 */
class DemoAgainstColocatedServerTest
{
    @Test
    void streamedOutputsEqualTheColocatedReferenceBitForBit()
            throws Exception
    {
        // The demo's shape with a short prefix: this server runs the slow reference attention.
        Workload workload = new Workload("Question: 2+2?\nAnswer: 4.\n\nQuestion: 3+5?\nAnswer: 8.\n\n",
                Workload.fewShot(3, 11).questions());
        try (LocalServer server = LocalServer.standard();
                StreamingClient client = new StreamingClient(URI.create("http://127.0.0.1:" + server.server.address().getPort()), Duration.ofMinutes(2))) {
            List<RequestResult> streamed = client.run(workload.prompts(), 4, 2);
            List<RequestResult> reference = new ColocatedReference(server.scheduler).run(workload.prompts(), 4, 2);
            DemoReport report = DemoReport.of(new DemoReport.Setup(true, true, 1, 1, 2, 4, "tiny-mla", "reference", "none"), streamed, reference,
                    ServerFigures.UNKNOWN, List.of(), Optional.empty());
            assertThat(streamed).allSatisfy(result -> assertThat(result.outputIds()).hasSize(4));
            assertThat(report.completed()).isEqualTo(3);
            assertThat(report.exactMatch()).isEqualTo(1.0);
            assertThat(report.ttft()).isPresent();
            assertThat(report.colocatedTtft()).isPresent();
            assertThat(report.itl().orElseThrow().p50()).isGreaterThanOrEqualTo(0);
        }
    }
}
