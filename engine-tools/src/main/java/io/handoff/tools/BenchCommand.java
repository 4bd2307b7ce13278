package io.handoff.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.bench.MatmulReference;
import io.handoff.bench.attention.AttentionBenchCommand;
import io.handoff.bench.collective.CollectiveBenchCommand;
import io.handoff.bench.grammar.GrammarBenchCommand;
import io.handoff.bench.scheduler.SchedulerBenchCommand;
import io.handoff.bench.serving.ServingCommand;
import io.handoff.bench.transfer.TransferBenchCommand;
import io.handoff.bench.transfer.TransferReceiverCommand;
import io.handoff.cli.ModelOption;
import io.handoff.cli.CommandGroup;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.Main;
import io.handoff.cli.ModelPathOption;
import io.handoff.cli.TuningOptions;
import io.handoff.core.runtime.ModelSource;
import io.handoff.http.base.ProcessMetrics;
import io.handoff.up.HostMemory;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.core.scheduler.Scheduler;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;

@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Benchmarks. Every figure comes with a reference measured in the same run.",
        subcommands = {BenchCommand.Compute.class, TransferBenchCommand.class, TransferReceiverCommand.class, ServingCommand.class,
                AttentionBenchCommand.class, SchedulerBenchCommand.class, CollectiveBenchCommand.class, GrammarBenchCommand.class})
final class BenchCommand
        extends CommandGroup
{
    @Command(name = "compute", mixinStandardHelpOptions = true,
            description = "Prefill and decode throughput of the colocated engine at several batch sizes, against the "
                    + "machine's throughput on the model's own matmul kernel (measured in the same run), and with --llama-cpp "
                    + "against llama.cpp on the same GGUF file and thread count.")
    static final class Compute
            implements Callable<Integer>
    {
        // full-length prompts before the measured ones: after one, the JIT is still recompiling and the heap still growing
        private static final int WARM_UP_PROMPTS = 3;

        @Mixin
        EngineOptions options;

        @Mixin
        ModelOption model;

        @Mixin
        ModelPathOption modelPath;

        @Mixin
        TuningOptions tuning;

        @Option(names = "--batch", paramLabel = "N[,N...]", split = ",", defaultValue = "1,32", description = "Batch sizes (default ${DEFAULT-VALUE}).")
        List<Integer> batches;

        @Option(names = "--prompt-len", paramLabel = "N", defaultValue = "512", description = "Prompt tokens for the prefill run (default ${DEFAULT-VALUE}).")
        int promptLength;

        @Option(names = "--decode-tokens", paramLabel = "N", defaultValue = "64", description = "Tokens per request for the decode run (default ${DEFAULT-VALUE}).")
        int decodeTokens;

        @Option(names = "--decode-context", paramLabel = "N", defaultValue = "32",
                description = "Prompt tokens before the decode run, so decode attends over N to N + decode-tokens positions; with --llama-cpp "
                        + "llama.cpp decodes after the same length (default ${DEFAULT-VALUE}).")
        int decodeContext;


        // defaults as initial values, not defaultValue: picocli applies a defaultValue after parsing, over the old spelling's
        @Option(names = "--rounds", paramLabel = "N", description = "Runs of each measurement; the median is reported (default ${DEFAULT-VALUE}).")
        int repeats = 3;

        /** The old spelling of --rounds. */
        @Option(names = "--repeats", hidden = true, paramLabel = "N")
        void repeats(int n)
        {
            repeats = n;
        }

        @Option(names = "--llama-cpp", paramLabel = "DIR",
                description = "Also measure llama.cpp on the same .gguf file (batch 1, same threads, prompt and decode lengths): DIR is a "
                        + "node_modules folder holding node-llama-cpp 3.x (make bench-llamacpp installs one); needs node on the PATH.")
        Path llamaCpp;

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
            tuning.applyTo(options.overrides);
            if (repeats < 1) {
                throw new IllegalArgumentException("--rounds must be at least 1, was " + repeats);
            }
            if (decodeContext < 1) {
                throw new IllegalArgumentException("--decode-context must be at least 1, was " + decodeContext);
            }
            if (llamaCpp != null && (modelPath.modelPath == null || !modelPath.modelPath.toString().endsWith(".gguf") || !batches.contains(1))) {
                throw new IllegalArgumentException("--llama-cpp compares llama.cpp on the same file at batch 1: give --model-path FILE.gguf "
                        + "and include 1 in --batch (was --model-path " + modelPath.modelPath + ", --batch " + batches + ")");
            }
            // Distinct prompts and no cache reuse: the prefill figure must be computed tokens.
            options.overrides.put("handoff.scheduler.prefix-cache", "false");
            ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
            ArrayNode rows = mapper.createArrayNode();
            int computeThreads;
            String kvType;
            try (Engine engine = Engine.start(options.source());
                    ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
                ModelConfig config = compute.model();
                if (decodeContext + decodeTokens > config.maxContext()) {
                    throw new IllegalArgumentException("--decode-context " + decodeContext + " plus --decode-tokens " + decodeTokens + " is past "
                            + config.name() + "'s context of " + config.maxContext() + " positions: lower either");
                }
                computeThreads = engine.config().config().getInt("handoff.scheduler.threads");
                // per rank: a tensor-parallel group's ranks on this host share its cores
                int ranks = engine.config().config().getInt("handoff.parallel.tensor-size");
                computeThreads = computeThreads == 0 ? Math.max(1, Runtime.getRuntime().availableProcessors() / ranks) : computeThreads;
                // the pool's own element type: the configured value may be "auto"
                kvType = compute.kv().geometry().dtype().name();
                long flopsPerToken = compute.matmulFlopsPerToken();
                // warm-up: pools, and the JIT's final tier for every kernel the runs take (full-length prompts compile the
                // prefill tiles and let the heap reach its working size; the measured runs then see the steady state a
                // serving process does)
                for (int w = 0; w < WARM_UP_PROMPTS; w++) {
                    run(compute.scheduler(), 1, promptLength, 2, config.vocabSize(), 99 + w);
                }
                decode(compute.scheduler(), 1, 99);
                for (int batch : batches) {
                    double[] measured = measure(compute, batch);
                    double prefillTokens = measured[0];
                    double decodeTokensPerSecond = measured[1];
                    double prefillReference = MatmulReference.gflops(computeThreads, config.intermediateSize(), config.hiddenSize(), 64, 500);
                    double decodeReference = MatmulReference.gflops(computeThreads, config.intermediateSize(), config.hiddenSize(), batch, 500);
                    ObjectNode row = rows.addObject();
                    row.put("model", config.name());
                    row.put("attention", compute.attentionId());
                    row.put("batch", batch);
                    row.put("prompt_len", promptLength);
                    row.put("prefill_tokens_per_s", round(prefillTokens));
                    row.put("prefill_matmul_gflops", round(prefillTokens * flopsPerToken / 1e9));
                    row.put("reference_matmul_gflops_64_tokens", round(prefillReference));
                    row.put("prefill_ratio_to_reference", round(prefillTokens * flopsPerToken / 1e9 / prefillReference));
                    row.put("decode_context", decodeContext);
                    row.put("decode_tokens_per_s", round(decodeTokensPerSecond));
                    row.put("decode_matmul_gflops", round(decodeTokensPerSecond * flopsPerToken / 1e9));
                    row.put("reference_matmul_gflops_batch_tokens", round(decodeReference));
                    row.put("decode_ratio_to_reference", round(decodeTokensPerSecond * flopsPerToken / 1e9 / decodeReference));
                    row.put("threads", computeThreads);
                    row.put("repeats", repeats);
                    // what the run holds: the weights stay mapped, so resident memory is about the file, the KV pool and a working set
                    row.put("resident_bytes", ProcessMetrics.residentBytes());
                    row.put("kv_pool_bytes", compute.kv().footprintBytes());
                    row.put("model_file_bytes", HostMemory.modelBytes(engine.config().config().getString(ModelSource.PATH_KEY)));
                    if (compute.ranks().isPresent()) {
                        row.put("tensor_parallel", compute.ranks().get().ranks().size());
                    }
                }
            }
            if (rows.get(0).has("tensor_parallel")) {
                oneRankReference(rows, computeThreads * rows.get(0).get("tensor_parallel").asInt());
            }
            // llama.cpp runs once the engine has closed, so the two never share the cores
            ObjectNode comparison = null;
            if (llamaCpp != null) {
                LlamaCppBench.Result llama = new LlamaCppBench(llamaCpp, modelPath.modelPath, computeThreads, promptLength, decodeContext, decodeTokens,
                        kvType, repeats).run();
                ObjectNode batchOne = (ObjectNode) rows.get(batches.indexOf(1));
                comparison = batchOne.putObject("llama_cpp");
                comparison.put("kv_type", kvType);
                comparison.put("prefill_tokens_per_s", round(llama.prefillTokensPerSecond()));
                comparison.put("decode_tokens_per_s", round(llama.decodeTokensPerSecond()));
                comparison.put("prefill_ratio", round(batchOne.get("prefill_tokens_per_s").asDouble() / llama.prefillTokensPerSecond()));
                comparison.put("decode_ratio", round(batchOne.get("decode_tokens_per_s").asDouble() / llama.decodeTokensPerSecond()));
            }
            PrintWriter out = spec.commandLine().getOut();
            if (json) {
                out.println(mapper.writeValueAsString(rows));
            }
            else {
                out.printf("%-9s %-7s %5s %14s %8s %14s %8s%n", "model", "attn", "batch", "prefill tok/s", "vs ref", "decode tok/s", "vs ref");
                rows.forEach(r -> out.printf("%-9s %-7s %5d %14.1f %8.2f %14.1f %8.2f%n", r.get("model").asText(), r.get("attention").asText(),
                        r.get("batch").asInt(), r.get("prefill_tokens_per_s").asDouble(), r.get("prefill_ratio_to_reference").asDouble(),
                        r.get("decode_tokens_per_s").asDouble(), r.get("decode_ratio_to_reference").asDouble()));
                out.println("vs ref: the engine's weight-matmul GFLOP/s divided by the same kernel's GFLOP/s on a bare "
                        + "[intermediate x hidden] matmul measured in this run (64 tokens for prefill, batch tokens for decode).");
                rows.forEach(r -> {
                    if (r.has("one_rank")) {
                        JsonNode one = r.get("one_rank");
                        out.printf("batch %d: %d ranks x %d threads against one rank with %d threads: prefill %.2fx (%.1f tok/s), decode %.2fx (%.1f tok/s)%n",
                                r.get("batch").asInt(), r.get("tensor_parallel").asInt(), r.get("threads").asInt(), one.get("threads").asInt(),
                                one.get("prefill_ratio").asDouble(), one.get("prefill_tokens_per_s").asDouble(), one.get("decode_ratio").asDouble(),
                                one.get("decode_tokens_per_s").asDouble());
                    }
                });
                if (comparison != null) {
                    ObjectNode batchOne = (ObjectNode) rows.get(batches.indexOf(1));
                    out.printf("%nthe same file, batch 1, %d threads, prompt %d tokens, %d decode tokens after %d, KV %s, median of %d:%n",
                            computeThreads, promptLength, decodeTokens, decodeContext, comparison.get("kv_type").asText(), repeats);
                    out.printf("%-10s %14s %14s%n", "", "prefill tok/s", "decode tok/s");
                    out.printf("%-10s %14.1f %14.1f%n", "handoff", batchOne.get("prefill_tokens_per_s").asDouble(),
                            batchOne.get("decode_tokens_per_s").asDouble());
                    out.printf("%-10s %14.1f %14.1f%n", "llama.cpp", comparison.get("prefill_tokens_per_s").asDouble(),
                            comparison.get("decode_tokens_per_s").asDouble());
                    out.printf("%-10s %14.2f %14.2f%n", "ratio", comparison.get("prefill_ratio").asDouble(), comparison.get("decode_ratio").asDouble());
                }
            }
            out.flush();
            return Main.OK;
        }

        /** Seconds to run {@code batch} requests of {@code promptLength} random tokens to {@code maxNew} tokens each. */
        private static double run(Scheduler scheduler, int batch, int promptLength, int maxNew, int vocab, long seed)
        {
            SplittableRandom random = new SplittableRandom(seed);
            List<RequestHandle> handles = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < batch; i++) {
                int[] prompt = random.ints(promptLength, 0, 256).toArray();
                handles.add(scheduler.submit(new GenerateRequest("bench-" + seed + "-" + i, prompt, maxNew, SamplingParams.GREEDY,
                        Set.of(), true, false), (index, token) -> {}));
            }
            handles.forEach(h -> h.result().join());
            return (System.nanoTime() - start) / 1e9;
        }

        /**
         * Decode tokens per second: from the moment every request has its first token (after a prompt of {@link #decodeContext}
         * tokens) to the last token.
         */
        private double decode(Scheduler scheduler, int batch, long seed)
        {
            SplittableRandom random = new SplittableRandom(7 + seed);
            AtomicLong firstTokens = new AtomicLong();
            AtomicLong allStarted = new AtomicLong();
            List<RequestHandle> handles = new ArrayList<>();
            for (int i = 0; i < batch; i++) {
                int[] prompt = random.ints(decodeContext, 0, 256).toArray();
                handles.add(scheduler.submit(new GenerateRequest("decode-" + seed + "-" + i, prompt, decodeTokens, SamplingParams.GREEDY,
                        Set.of(), true, false), (index, token) -> {
                            if (index == 0 && firstTokens.incrementAndGet() == batch) {
                                allStarted.set(System.nanoTime());
                            }
                        }));
            }
            handles.forEach(h -> h.result().join());
            long end = System.nanoTime();
            return (double) batch * (decodeTokens - 1) / ((end - allStarted.get()) / 1e9);
        }

        /** Median prefill tokens/s (batch x prompt) and decode tokens/s of {@code batch} requests. */
        private double[] measure(ComputeEngine compute, int batch)
                throws InterruptedException
        {
            double[] prefills = new double[repeats];
            double[] decodes = new double[repeats];
            for (int r = 0; r < repeats; r++) {
                prefills[r] = (double) batch * promptLength / run(compute.scheduler(), batch, promptLength, 1, compute.model().vocabSize(), 1000L * r + batch);
                decodes[r] = decode(compute.scheduler(), batch, 1000L * r + batch);
            }
            return new double[] {median(prefills), median(decodes)};
        }

        /**
         * A tensor-parallel run's reference, measured after it in the same command: one rank with every thread the group had,
         * on the same model and batches; each row gets {@code one_rank} with its figures and the group's ratios to them.
         */
        private void oneRankReference(ArrayNode rows, int threads)
                throws InterruptedException
        {
            Map<String, String> single = Map.of("handoff.parallel.tensor-size", "1", "handoff.scheduler.threads", Integer.toString(threads));
            try (Engine engine = Engine.start(options.source().withOverrides(single));
                    ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
                run(compute.scheduler(), 1, promptLength, 2, compute.model().vocabSize(), 99);
                decode(compute.scheduler(), 1, 99);
                for (int i = 0; i < batches.size(); i++) {
                    double[] measured = measure(compute, batches.get(i));
                    ObjectNode row = (ObjectNode) rows.get(i);
                    ObjectNode one = row.putObject("one_rank");
                    one.put("threads", threads);
                    one.put("prefill_tokens_per_s", round(measured[0]));
                    one.put("decode_tokens_per_s", round(measured[1]));
                    one.put("prefill_ratio", round(row.get("prefill_tokens_per_s").asDouble() / measured[0]));
                    one.put("decode_ratio", round(row.get("decode_tokens_per_s").asDouble() / measured[1]));
                }
            }
        }

        private static double median(double[] values)
        {
            double[] sorted = values.clone();
            Arrays.sort(sorted);
            return sorted[sorted.length / 2];
        }

        private static double round(double value)
        {
            return Math.round(value * 100) / 100.0;
        }
    }
}
