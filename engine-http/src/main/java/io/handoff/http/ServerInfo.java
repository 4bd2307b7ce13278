package io.handoff.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.HandoffVersion;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.ServerConfig;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Supplier;

import static java.util.Objects.requireNonNull;

/**
 * SGLang's {@code GET /get_server_info}: the server's settings under SGLang's server-argument names where one means the
 * same here ({@code model_path}, {@code page_size}, {@code disaggregation_mode}, {@code chunked_prefill_size}, ...), the
 * scheduler's pool size ({@code max_total_num_tokens}), its state now ({@code internal_states}) and the version. It
 * never shows a secret: of the API keys and the cluster secret only whether they are configured.
 */
final class ServerInfo
{
    private final ServerConfig config;
    private final Supplier<InetSocketAddress> address;
    private final Scheduler scheduler;
    private final ModelConfig model;
    private final Optional<Disaggregation> disaggregation;
    private final String role;

    /** @param address where the server listens (known once it is bound) */
    ServerInfo(ServerConfig config, Supplier<InetSocketAddress> address, Scheduler scheduler, ModelConfig model, Optional<Disaggregation> disaggregation,
            String role)
    {
        this.config = requireNonNull(config, "config is null");
        this.address = requireNonNull(address, "address is null");
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
        this.model = requireNonNull(model, "model is null");
        this.disaggregation = requireNonNull(disaggregation, "disaggregation is null");
        this.role = requireNonNull(role, "role is null");
    }

    void handle(Exchange exchange)
            throws IOException
    {
        exchange.sendJson(200, body(scheduler.stats()));
    }

    ObjectNode body(SchedulerStats stats)
    {
        SchedulerConfig scheduling = scheduler.config();
        int pageSize = scheduler.pageSize();
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        body.put("role", role);
        body.put("model_path", model.name());
        body.put("served_model_name", model.name());
        body.put("host", config.host());
        body.put("port", address.get().getPort());
        body.put("context_length", model.maxContext());
        body.put("page_size", pageSize);
        body.put("max_running_requests", scheduling.maxRunningRequests());
        body.put("max_queued_requests", scheduling.maxQueuedRequests());
        body.put("chunked_prefill_size", scheduling.chunkedPrefillSize());
        body.put("disable_overlap_schedule", !scheduling.overlap());
        body.put("compute_threads", scheduling.threads());
        body.put("max_total_num_tokens", (long) stats.pages().total() * pageSize);
        body.put("max_req_input_len", config.limits().maxPromptTokens() > 0 ? Math.min(config.limits().maxPromptTokens(), model.maxContext() - 1)
                : model.maxContext() - 1);
        body.put("max_body_bytes", config.maxBodyBytes());
        body.put("api_key_required", config.access().apiKeys().required());
        body.put("router_signature_required", config.access().clusterMac().isPresent());
        body.put("debug_endpoints", config.access().debugEndpoints());
        body.put("disaggregation_mode", disaggregation.map(d -> d.role().name().toLowerCase(Locale.ROOT)).orElse("null"));
        disaggregation.ifPresent(d -> {
            body.put("disaggregation_transfer_backend", d.backendId());
            body.put("disaggregation_transport", d.transport());
            ArrayNode capabilities = body.putArray("transfer_capabilities");
            d.capabilities().stream().map(Enum::name).sorted().forEach(capabilities::add);
            body.put("early_send_cached_prefix", d.earlySend().enabled());
        });
        ObjectNode state = body.putArray("internal_states").addObject();
        state.put("running_requests", stats.running());
        state.put("waiting_requests", stats.waiting());
        state.put("kv_pages_total", stats.pages().total());
        state.put("kv_pages_free", stats.pages().free());
        state.put("kv_pages_cached", stats.cachedPages());
        state.put("kv_pages_receiving", stats.pages().receiving());
        state.put("kv_pages_quarantined", stats.pages().quarantined());
        state.put("prefix_hit_rate", stats.prefixHitRate());
        state.put("steps", stats.steps());
        state.put("finished_requests", stats.finishedRequests());
        body.put("version", HandoffVersion.get());
        return body;
    }
}
