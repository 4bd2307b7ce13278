package io.handoff.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.core.scheduler.TokenListener;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;

@Command(name = "generate", mixinStandardHelpOptions = true,
        description = "Generate text for one or more prompts in this process (all prompts are batched together).")
final class GenerateCommand
        implements Callable<Integer>
{
    @Mixin
    EngineOptions options;

    @Option(names = "--prompt", required = true, paramLabel = "TEXT", description = "A prompt; repeat for several.")
    List<String> prompts;

    @Option(names = "--max-new-tokens", defaultValue = "32", paramLabel = "N", description = "Tokens to generate per prompt (default ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--model", paramLabel = "NAME", description = "Model (tiny-mla, tiny-gqa); sets handoff.model.name.")
    String model;

    @Mixin
    ModelPathOption modelPath;

    @Option(names = "--attention", paramLabel = "ID", description = "Attention backend (triton, aiter); sets handoff.attention.backend.")
    String attention;

    @Option(names = "--temperature", defaultValue = "0", description = "Sampling temperature; 0 is greedy (default).")
    float temperature;

    @Option(names = "--top-p", defaultValue = "1", description = "Nucleus sampling threshold (default 1).")
    float topP;

    @Option(names = "--seed", defaultValue = "0", description = "Sampling seed (default 0).")
    long seed;

    @Option(names = "--ignore-eos", description = "Keep generating past the end-of-sequence token.")
    boolean ignoreEos;

    @Option(names = "--json", description = "Print a JSON array, one object per prompt.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        if (maxNewTokens < 1) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--max-new-tokens must be at least 1, got " + maxNewTokens);
        }
        if (model != null) {
            options.overrides.put("handoff.model.name", model);
        }
        modelPath.applyTo(options.overrides);
        if (attention != null) {
            options.overrides.put("handoff.attention.backend", attention);
        }
        SamplingParams sampling = new SamplingParams(temperature, topP, seed);
        try (Engine engine = Engine.start(options.source());
                ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
            Tokenizer tokenizer = compute.tokenizer();
            List<RequestHandle> handles = new ArrayList<>();
            for (int i = 0; i < prompts.size(); i++) {
                GenerateRequest request = new GenerateRequest("generate-" + i, tokenizer.encodePrompt(prompts.get(i)), maxNewTokens,
                        sampling, Set.of(), ignoreEos, false);
                handles.add(compute.scheduler().submit(request, TokenListener.NONE));
            }
            List<GenerateResult> results = new ArrayList<>();
            for (RequestHandle handle : handles) {
                results.add(handle.result().join());
            }
            print(results, tokenizer, compute);
            return results.stream().anyMatch(r -> r.error().isPresent()) ? Main.FAILURE : Main.OK;
        }
    }

    private void print(List<GenerateResult> results, Tokenizer tokenizer, ComputeEngine compute)
            throws Exception
    {
        PrintWriter out = spec.commandLine().getOut();
        if (!json) {
            for (int i = 0; i < results.size(); i++) {
                GenerateResult result = results.get(i);
                out.println(prompts.get(i) + tokenizer.decode(result.outputIds()));
                result.error().ifPresent(error -> out.println("  [error: " + error + "]"));
            }
            out.flush();
            return;
        }
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ArrayNode array = mapper.createArrayNode();
        for (int i = 0; i < results.size(); i++) {
            GenerateResult result = results.get(i);
            ObjectNode node = array.addObject();
            node.put("prompt", prompts.get(i));
            node.put("text", tokenizer.decode(result.outputIds()));
            ArrayNode ids = node.putArray("output_ids");
            for (int id : result.outputIds()) {
                ids.add(id);
            }
            node.put("prompt_tokens", result.promptTokens());
            node.put("completion_tokens", result.outputIds().length);
            node.put("cached_tokens", result.cachedTokens());
            node.put("finish_reason", result.finishReason().name().toLowerCase(java.util.Locale.ROOT));
            node.put("error", result.error().orElse(null));
            node.put("model", compute.model().name());
            node.put("attention", compute.attentionId());
            node.put("ttft_ms", result.firstTokenNanos() / 1e6);
            node.put("latency_ms", result.totalNanos() / 1e6);
        }
        out.println(mapper.writeValueAsString(array));
        out.flush();
    }
}
