package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.Transformer;
import io.handoff.core.prefix.RadixCache;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.http.ApiServer;
import io.handoff.http.base.ServerConfig;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code /v1/chat/completions} as the real server registers it: today's ByteTokenizer model has no chat template. */
class ChatRouteTest
{
    @Test
    void theServersByteTokenizerModelRefusesChatForWantOfATemplate()
            throws Exception
    {
        ModelConfig model = ModelConfig.byName("tiny-mla");
        KvPool kv = KvPool.allocate(KvGeometry.of(model.attentionGeometry(), model.layers(), KvDtype.F32, 16), 64);
        Transformer transformer = new Transformer(model, new SyntheticWeights(model.weightsSeed()), 1);
        Scheduler scheduler = new Scheduler(new SchedulerConfig(2, 64, 16, true, 1), transformer, kv, new RadixCache(16, kv.pagePool()),
                new ReferenceAttention(model.attentionGeometry(), kv.view()), FaultInjector.NONE);
        ApiServer server = ApiServer.start(ServerConfig.loopback(), scheduler, model);
        try {
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + "/v1/chat/completions");
            HttpResponse<String> response = client.send(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(
                    "{\"model\": \"tiny-mla\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(400);
            JsonNode error = new ObjectMapper().readTree(response.body()).get("error");
            assertThat(error.get("message").textValue()).isEqualTo("model tiny-mla has no chat template; use /v1/completions with a prompt you format yourself");
            assertThat(error.get("code").textValue()).isEqualTo("no_chat_template");
            HttpResponse<String> wrongMethod = client.send(HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(wrongMethod.statusCode()).isEqualTo(405);
        }
        finally {
            server.close();
            scheduler.close();
            transformer.close();
            kv.close();
        }
    }
}
