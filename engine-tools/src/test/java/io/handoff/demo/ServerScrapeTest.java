package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class ServerScrapeTest
{
    private static final String PREFILL_METRICS = """
            handoff_running_requests 0
            handoff_waiting_requests 0
            handoff_server_inflight_requests 0
            handoff_kv_pages{state="free"} 4000
            handoff_kv_pages{state="owned"} 96
            handoff_kv_pages{state="receiving"} 0
            handoff_kv_pages{state="quarantined"} 0
            handoff_kv_pool_pages 4096
            handoff_prefix_cache_pages 96
            handoff_kv_transfer_bytes_total 1500000000
            handoff_kv_transfer_busy_seconds_total 0.75
            handoff_prompt_tokens_total 1250000
            """;
    private static final String DECODE_METRICS = """
            handoff_running_requests 0
            handoff_waiting_requests 0
            handoff_kv_pages{state="free"} 4090
            handoff_kv_pages{state="owned"} 4
            handoff_kv_pages{state="receiving"} 0
            handoff_kv_pages{state="quarantined"} 2
            handoff_kv_pool_pages 4096
            handoff_prefix_cache_pages 0
            """;
    private static final String BOOTSTRAP = """
            {"role":"prefill","control":"127.0.0.1:41000","transfer_backend":"mooncake","transport":"shm",
             "early_send":{"requested":"auto","enabled":true,"reason":"mooncake declares STAGING"},
             "kv":{"layout":"MLA","heads":1,"head_dim":576,"v_head_dim":512,"values_in_key_row":true,"layers":2,"dtype":"F16",
                   "page_size":1,"bytes_per_token":2304,"bytes_per_page":2304}}
            """;

    @Test
    void readsTransferPagesAndTheEarlySendDecision()
            throws Exception
    {
        List<String> notes = new ArrayList<>();
        try (FakeServer prefill = new FakeServer().answer("/metrics", 200, "text/plain", PREFILL_METRICS).answer("/bootstrap", 200, "application/json", BOOTSTRAP);
                FakeServer decode = new FakeServer().answer("/metrics", 200, "text/plain", DECODE_METRICS);
                HttpClient client = HttpClient.newHttpClient()) {
            // A decode that keeps pages is given the settle time to return them; a short one keeps the test short.
            ServerFigures figures = new ServerScrape(client, Duration.ofMillis(200), notes::add).collect(List.of(prefill.url()), List.of(decode.url()));
            assertThat(figures.kvBytesTransferred()).hasValue(1.5e9);
            assertThat(figures.transferGbps()).hasValue(2.0);
            assertThat(figures.leakedPrefillPages()).hasValue(0);
            assertThat(figures.leakedDecodePages()).hasValue(6);
            assertThat(figures.bootstrap().transport()).contains("shm");
            assertThat(figures.bootstrap().earlySend()).isEqualTo(new BootstrapInfo.EarlySend(Optional.of("auto"), Optional.of(true),
                    Optional.of("mooncake declares STAGING")));
            assertThat(figures.bootstrap().kv()).contains(new BootstrapInfo.KvShape("MLA", 1, 576, "F16", 2304));
            assertThat(figures.promptTokens()).hasValue(1.25e6);
            assertThat(figures.kvBytesPerPromptToken()).hasValue(1200.0);
            assertThat(notes).isEmpty();
        }
    }

    @Test
    void aServerWithoutTheFiguresIsReportedAsUnknownWithANote()
            throws Exception
    {
        List<String> notes = new ArrayList<>();
        try (FakeServer prefill = new FakeServer().answer("/metrics", 200, "text/plain", DECODE_METRICS.replace("quarantined\"} 2", "quarantined\"} 0")
                        .replace("owned\"} 4", "owned\"} 0").replace("free\"} 4090", "free\"} 4096"));
                FakeServer decode = new FakeServer().answer("/metrics", 500, "text/plain", "oops");
                HttpClient client = HttpClient.newHttpClient()) {
            ServerFigures figures = new ServerScrape(client, Duration.ofMillis(200), notes::add).collect(List.of(prefill.url()), List.of(decode.url()));
            assertThat(figures.kvBytesTransferred()).isEmpty();
            assertThat(figures.transferGbps()).isEmpty();
            assertThat(figures.leakedPrefillPages()).hasValue(0);
            assertThat(figures.leakedDecodePages()).isEmpty();
            assertThat(figures.bootstrap()).isEqualTo(BootstrapInfo.UNKNOWN);
            assertThat(notes).anyMatch(note -> note.equals("GET " + decode.url() + "/metrics answered HTTP 500"))
                    .anyMatch(note -> note.startsWith("GET " + prefill.url() + "/bootstrap answered HTTP 404"));
        }
    }
}
