package io.handoff.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.output.Generation;
import io.handoff.core.output.GenerationMetrics;
import io.handoff.core.output.GenerationParams;
import io.handoff.core.output.OutputText;
import io.handoff.core.output.SamplingOptions;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
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

    @Mixin
    ModelOption model;

    @Mixin
    ModelPathOption modelPath;

    @Mixin
    TuningOptions tuning;

    @Option(names = "--temperature", defaultValue = "0", paramLabel = "T", description = "Sampling temperature, >= 0; 0 is greedy (default).")
    float temperature;

    @Option(names = "--top-p", defaultValue = "1", paramLabel = "P", description = "Nucleus sampling threshold in (0, 1] (default 1).")
    float topP;

    @Option(names = "--seed", defaultValue = "0", paramLabel = "N", description = "Sampling seed (default 0).")
    long seed;

    @Option(names = "--ignore-eos", description = "Keep generating past the end-of-sequence token.")
    boolean ignoreEos;

    @Option(names = "--stop", paramLabel = "STR", description = "Stop when the output contains STR; the text ends before it and the "
            + "finish reason is stop, as in the HTTP APIs. Repeat for several.")
    List<String> stops = new ArrayList<>();

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
        model.applyTo(options.overrides);
        modelPath.applyTo(options.overrides);
        tuning.applyTo(options.overrides);
        SamplingParams sampling;
        try {
            sampling = new SamplingParams(temperature, topP, seed);
        }
        catch (IllegalArgumentException e) {
            // the options' names, not the HTTP fields' the message uses
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage().replace("temperature", "--temperature").replace("top_p", "--top-p"));
        }
        try (Engine engine = Engine.start(options.source());
                ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
            Tokenizer tokenizer = compute.tokenizer();
            SamplingOptions output = new SamplingOptions(sampling, stops, Set.of(), ignoreEos, false, true);
            // Every prompt is submitted before any is read, so the scheduler batches them; each Generation keeps its
            // tokens until it is run.
            List<Generation> generations = new ArrayList<>();
            for (int i = 0; i < prompts.size(); i++) {
                GenerationParams params = new GenerationParams("generate-" + i, tokenizer.encodePrompt(prompts.get(i)), maxNewTokens, output,
                        Optional.empty(), Optional.empty());
                Generation generation = new Generation(params, compute.scheduler(), tokenizer, GenerationMetrics.NONE, () -> {}, false);
                generation.submit();
                generations.add(generation);
            }
            List<Generation.Outcome> results = new ArrayList<>();
            for (Generation generation : generations) {
                try (generation) {
                    results.add(generation.run(Generation.Sink.NONE));
                }
            }
            print(results, compute);
            return results.stream().anyMatch(r -> r.error().isPresent()) ? Main.FAILURE : Main.OK;
        }
    }

    private void print(List<Generation.Outcome> results, ComputeEngine compute)
            throws Exception
    {
        PrintWriter out = spec.commandLine().getOut();
        if (!json) {
            for (int i = 0; i < results.size(); i++) {
                Generation.Outcome generated = results.get(i);
                out.println(prompts.get(i) + generated.text());
                generated.error().ifPresent(error -> out.println("  [error: " + error + "]"));
            }
            out.flush();
            return;
        }
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ArrayNode array = mapper.createArrayNode();
        for (int i = 0; i < results.size(); i++) {
            Generation.Outcome result = results.get(i);
            ObjectNode node = array.addObject();
            node.put("prompt", prompts.get(i));
            node.put("text", result.text());
            ArrayNode ids = node.putArray("output_ids");
            for (int id : result.outputIds()) {
                ids.add(id);
            }
            node.put("prompt_tokens", result.promptTokens());
            node.put("completion_tokens", result.outputIds().length);
            node.put("cached_tokens", result.cachedTokens());
            node.put("finish_reason", result.reason().name().toLowerCase(java.util.Locale.ROOT));
            result.match().ifPresent(match -> {
                switch (match) {
                    case OutputText.StopString stop -> node.put("matched_stop", stop.stop());
                    case OutputText.StopToken token -> node.put("matched_stop", token.id());
                }
            });
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
