package io.handoff.bench.grammar;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.Main;
import io.handoff.cli.ModelOption;
import io.handoff.cli.ModelPathOption;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.grammar.Grammar;
import io.handoff.core.grammar.JsonSchemaGrammar;
import io.handoff.core.grammar.TokenGrammar;
import io.handoff.core.grammar.TokenGrammars;
import io.handoff.core.grammar.TokenMatcher;
import io.handoff.core.grammar.TokenVocabulary;
import io.handoff.core.json.Json;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.Scheduler;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;

/**
 * {@code handoff bench grammar}: what a grammar costs a generation, against the decode step of the same model in the
 * same run. It generates with and without a JSON Schema constraint (batch 1, the same prompts and seeds) and reports
 * the time per output token of each, then replays the constrained outputs through a matcher whose grammar has computed
 * no mask yet (the first request with a schema: every state's mask is a walk of the vocabulary) and again with its masks
 * kept (the requests after it), timing the mask of every token.
 */
@Command(name = "grammar", mixinStandardHelpOptions = true,
        description = "Token-mask time per output token of a JSON Schema constraint (first request and later ones) against the same "
                + "model's decode step, measured in the same run.")
public final class GrammarBenchCommand
        implements Callable<Integer>
{
    /** A schema with the kinds of states a response format has: enums, bounded strings, integers, an array, a nested object. */
    static final String DEFAULT_SCHEMA = """
            {"type": "object", "properties": {
              "city": {"type": "string", "maxLength": 24},
              "answer": {"type": "string", "enum": ["yes", "no", "maybe"]},
              "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
              "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
              "notes": {"type": "string"},
              "where": {"type": "object", "properties": {"lat": {"type": "number"}, "ok": {"type": "boolean"}},
                        "required": ["lat", "ok"], "additionalProperties": false}},
             "required": ["city", "answer", "confidence", "tags", "notes", "where"], "additionalProperties": false}
            """;

    @Mixin
    EngineOptions options;

    @Mixin
    ModelOption model;

    @Mixin
    ModelPathOption modelPath;

    @Option(names = "--schema", paramLabel = "FILE", description = "A JSON Schema to constrain with (default: a response format with "
            + "enums, bounded and free strings, integers, an array and a nested object).")
    Path schema;

    @Option(names = "--tokens", paramLabel = "N", defaultValue = "96", description = "Output tokens per request at most (default ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--requests", paramLabel = "N", defaultValue = "4", description = "Requests of each kind, each with its own seed (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--json", description = "Print JSON.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        model.applyTo(options.overrides);
        modelPath.applyTo(options.overrides);
        options.overrides.put("handoff.scheduler.prefix-cache", "false");
        String schemaText = schema == null ? DEFAULT_SCHEMA : Files.readString(schema);
        Grammar grammar = JsonSchemaGrammar.compile(Json.parse(schemaText, schema == null ? "the default schema" : schema.toString()),
                "json_schema " + schemaText);
        ObjectNode report = new ObjectMapper().createObjectNode();
        try (Engine engine = Engine.start(options.source());
                ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
            Scheduler scheduler = compute.scheduler();
            int vocab = compute.model().vocabSize();
            long started = System.nanoTime();
            TokenVocabulary vocabulary = TokenVocabulary.of(compute.tokenizer(), compute.tokenizer().vocabSize());
            double vocabularyMs = (System.nanoTime() - started) / 1e6;
            TokenGrammar shared = TokenGrammars.of(compute.tokenizer()).bind(grammar);
            // warm-up: the JIT's final tier for the model and the matcher
            generate(scheduler, Optional.empty(), 1000, vocab);
            generate(scheduler, Optional.of(shared), 1000, vocab);
            List<Double> free = new ArrayList<>();
            List<Double> constrained = new ArrayList<>();
            List<int[]> outputs = new ArrayList<>();
            for (int r = 0; r < requests; r++) {
                Run plain = generate(scheduler, Optional.empty(), r, vocab);
                Run held = generate(scheduler, Optional.of(shared), r, vocab);
                free.add(plain.msPerToken());
                constrained.add(held.msPerToken());
                outputs.add(held.outputs());
            }
            Set<Integer> ends = compute.tokenizer().eosTokenIds();
            // cold: a grammar that has computed no mask (a new schema's first request); warm: the same grammar again
            TokenGrammar cold = new TokenGrammar(grammar, vocabulary);
            double[] coldMs = replay(cold, outputs, ends);
            double[] warmMs = replay(cold, outputs, ends);
            double decodeMs = median(free);
            report.put("model", compute.model().toString());
            report.put("vocabulary", vocabulary.rows());
            report.put("vocabulary_sort_ms", vocabularyMs);
            report.put("decode_ms_per_token", decodeMs);
            report.put("constrained_decode_ms_per_token", median(constrained));
            report.put("constrained_over_free", median(constrained) / decodeMs);
            report.put("mask_ms_first_request_mean", mean(coldMs));
            report.put("mask_ms_first_request_max", Arrays.stream(coldMs).max().orElse(0));
            report.put("mask_ms_later_requests_mean", mean(warmMs));
            report.put("mask_first_request_over_decode_step", mean(coldMs) / decodeMs);
            report.put("mask_later_requests_over_decode_step", mean(warmMs) / decodeMs);
            report.put("masked_tokens", coldMs.length);
        }
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(report));
        }
        else {
            out.printf("vocabulary %d tokens (sorted once per tokenizer in %.0f ms)%n", report.get("vocabulary").asInt(),
                    report.get("vocabulary_sort_ms").asDouble());
            out.printf("decode step, batch 1: %.2f ms/token free, %.2f ms/token with the schema (%.3fx)%n", report.get("decode_ms_per_token").asDouble(),
                    report.get("constrained_decode_ms_per_token").asDouble(), report.get("constrained_over_free").asDouble());
            out.printf("mask per token, a schema's first request: %.3f ms mean (%.1f%% of the decode step), %.2f ms at most%n",
                    report.get("mask_ms_first_request_mean").asDouble(), 100 * report.get("mask_first_request_over_decode_step").asDouble(),
                    report.get("mask_ms_first_request_max").asDouble());
            out.printf("mask per token, later requests: %.3f ms mean (%.2f%% of the decode step) over %d tokens%n",
                    report.get("mask_ms_later_requests_mean").asDouble(), 100 * report.get("mask_later_requests_over_decode_step").asDouble(),
                    report.get("masked_tokens").asInt());
        }
        out.flush();
        return Main.OK;
    }

    private record Run(int[] outputs, double msPerToken) {}

    // One request of a seeded random prompt: its outputs and the time per output token after the first.
    private Run generate(Scheduler scheduler, Optional<TokenGrammar> constraint, long seed, int vocab)
    {
        int[] prompt = new SplittableRandom(seed).ints(32, 0, Math.min(vocab, 1000)).toArray();
        long[] first = new long[1];
        GenerateRequest request = new GenerateRequest("grammar-bench-" + constraint.isPresent() + "-" + seed + "-" + System.nanoTime(), prompt, tokens,
                new SamplingParams(0.8f, 1f, seed), Set.of(), constraint.isEmpty(), false);
        if (constraint.isPresent()) {
            request = request.withConstraint(constraint.get());
        }
        GenerateResult result = scheduler.submit(request, (index, token) -> {
            if (index == 0) {
                first[0] = System.nanoTime();
            }
        }).result().join();
        long end = System.nanoTime();
        int produced = result.outputIds().length;
        return new Run(result.outputIds(), produced > 1 ? (end - first[0]) / 1e6 / (produced - 1) : Double.NaN);
    }

    // Milliseconds of each token's mask (and the advance to it), output after output.
    private static double[] replay(TokenGrammar grammar, List<int[]> outputs, Set<Integer> ends)
    {
        List<Double> times = new ArrayList<>();
        for (int[] output : outputs) {
            TokenMatcher matcher = new TokenMatcher(grammar, ends);
            for (int i = 0; i < output.length; i++) {
                long start = System.nanoTime();
                matcher.catchUp(output, i);
                long[] mask = matcher.allowed();
                times.add((System.nanoTime() - start) / 1e6);
                if (mask == null) {
                    break;
                }
            }
        }
        return times.stream().mapToDouble(Double::doubleValue).toArray();
    }

    private static double median(List<Double> values)
    {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).filter(v -> !Double.isNaN(v)).sorted().toArray();
        return sorted.length == 0 ? Double.NaN : sorted[sorted.length / 2];
    }

    private static double mean(double[] values)
    {
        return Arrays.stream(values).average().orElse(Double.NaN);
    }
}
