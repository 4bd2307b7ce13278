package io.handoff.core.model;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.hf.DeepseekHfConfig;
import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.model.hf.SafetensorsWeights;
import io.handoff.core.model.parallel.RankLostException;
import io.handoff.core.parallel.RankGroup;
import io.handoff.core.parallel.RankLauncher;
import io.handoff.core.parallel.RankWorker;
import io.handoff.core.parallel.TensorParallelRunner;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A tensor-parallel group over real loopback links (its other ranks as threads of this JVM, each with its own pool and
 * attention) computes the same bits as one rank: every logit of a chunked prefill and the greedy ids of a continuous
 * batch, for every architecture and group size, KV heads replicated where the size exceeds them.
 */
class TensorParallelTest
{
    private static final int PAGES = 96;
    private static final List<int[]> PROMPTS = List.of(tokens(37, 3), tokens(5, 4), tokens(21, 5));

    @TempDir
    Path temp;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tiny-gqa", "qwen2-gqa", "qwen3-gqa", "tiny-mla"})
    void everyGroupSizeComputesTheSingleRanksBits(String name)
    {
        ModelConfig config = name.startsWith("tiny") ? ModelConfig.byName(name) : GqaVariantsTest.variant(name);
        int[] sizes = config.architecture() == Architecture.MLA ? new int[] {2, 4} : new int[] {2, 4, 8};
        same(config, c -> new SyntheticWeights(c.weightsSeed()), sizes);
    }

    @ParameterizedTest(name = "DeepSeek {0}")
    @ValueSource(strings = {"V2", "V3"})
    void deepseekWithExpertsSpreadOverRanksComputesTheSingleRanksBits(String version)
    {
        Path directory = temp.resolve(version);
        SeededDeepseekCheckpoint.write(directory, version.equals("V2") ? Options.v2(31) : Options.v3(32).withYarn(true));
        Path file = directory.resolve(HfModelConfig.FILE);
        ModelConfig config = DeepseekHfConfig.parse(JsonFile.readObject(file, 1 << 20), file.toString()).toModelConfig(version, 4096, version);
        same(config, c -> SafetensorsWeights.open(directory), new int[] {2, 4});
    }

    @Test
    void aSizeTheHeadsDoNotSplitIntoIsRefusedWithTheReason()
    {
        ModelConfig config = ModelConfig.byName("tiny-gqa");
        assertThatThrownBy(() -> new Transformer(config, new SyntheticWeights(config.weightsSeed()), 1, new FixedShard(3)))
                .hasMessageContaining("tensor-parallel size 3 does not divide model 'tiny-gqa''s 8 attention heads");
    }

    @Test
    void aRankThatLeavesFailsTheStepInFlightAndEveryLaterOneNamingIt()
            throws Exception
    {
        ModelConfig config = ModelConfig.byName("tiny-gqa");
        CountDownLatch joined = new CountDownLatch(1);
        List<RankWorker> workers = new ArrayList<>();
        try (Group group = Group.start(config, new SyntheticWeights(config.weightsSeed()), 2, workers, joined)) {
            joined.await();
            int[] row = group.harness.allocate(9);
            group.harness.forward(ForwardBatch.builder().extend(tokens(8, 1), 0, row));
            workers.getFirst().close();
            assertThatThrownBy(() -> {
                for (int i = 0; i < 1000; i++) {
                    group.harness.forward(ForwardBatch.builder().decode(3, 8, row));
                }
            }).isInstanceOf(RankLostException.class).hasMessageStartingWith("rank 1 lost");
            assertThat(group.rankGroup.ranks()).extracting(RankGroup.RankStatus::healthy).containsExactly(true, false);
            assertThat(group.rankGroup.failure()).hasValueSatisfying(reason -> assertThat(reason).startsWith("rank 1 lost"));
        }
    }

    private static void same(ModelConfig config, Function<ModelConfig, WeightSource> weights, int[] sizes)
    {
        float[][] expectedLogits;
        List<int[]> expectedIds;
        try (Transformer model = new Transformer(config, weights.apply(config), 2);
                ModelHarness h = new ModelHarness(model, KvDtype.F32, PAGES, 1)) {
            expectedLogits = h.prefillAllPositions(PROMPTS.getFirst(), h.allocate(40), 16);
            expectedIds = h.generate(PROMPTS, 6, 16, 1);
        }
        for (int size : sizes) {
            List<RankWorker> workers = new ArrayList<>();
            try (Group group = Group.start(config, weights.apply(config), size, workers, new CountDownLatch(size - 1))) {
                float[][] logits = group.harness.prefillAllPositions(PROMPTS.getFirst(), group.harness.allocate(40), 16);
                for (int position = 0; position < logits.length; position++) {
                    assertThat(logits[position]).as("size %d, position %d", size, position).containsExactly(expectedLogits[position]);
                }
                assertThat(group.harness.generate(PROMPTS, 6, 16, 1)).as("size %d", size).containsExactlyElementsOf(expectedIds);
            }
        }
    }

    /** A leader over loopback and its ranks as threads, each rank with its own transformer, pool and attention. */
    private record Group(RankGroup rankGroup, Transformer leader, ModelHarness harness, List<CompletableFuture<Void>> ranks)
            implements AutoCloseable
    {
        static Group start(ModelConfig config, WeightSource weights, int size, List<RankWorker> workers, CountDownLatch joined)
        {
            List<CompletableFuture<Void>> ranks = new ArrayList<>();
            RankLauncher threads = (rank, leader) -> {
                CompletableFuture<Void> done = new CompletableFuture<>();
                // a thread of its own: a rank blocks on its link between steps
                Thread.ofPlatform().daemon().start(() -> {
                    runRank(config, weights, rank, leader, workers, joined);
                    done.complete(null);
                });
                ranks.add(done);
                return Optional.empty();
            };
            RankGroup group = RankGroup.start(new RankGroup.Settings(size, "127.0.0.1", 0, ClusterSecurity.loopbackOnly(), Duration.ofSeconds(60), Duration.ofSeconds(60),
                    Duration.ofSeconds(60), 1 << 26, config.name(), PAGES, java.util.Optional.empty()), threads);
            Transformer leader = new Transformer(config, weights, 1, group);
            return new Group(group, leader, new ModelHarness(leader, new TensorParallelRunner(leader, group), KvDtype.F32, PAGES, 1), ranks);
        }

        private static void runRank(ModelConfig config, WeightSource weights, int rank, String leader, List<RankWorker> workers, CountDownLatch joined)
        {
            try (RankWorker worker = RankWorker.join(leader, rank, config.name(), ClusterSecurity.loopbackOnly(), Duration.ofSeconds(30),
                    Duration.ofSeconds(60), 1 << 26);
                    Transformer model = new Transformer(config, weights, 1, worker);
                    ModelHarness h = new ModelHarness(model, KvDtype.F32, worker.pages(), 1)) {
                synchronized (workers) {
                    workers.add(worker);
                }
                joined.countDown();
                worker.serve((batch, rows) -> model.forwardRows(batch, h.kv, h.attention, Transformer.LayerHook.NONE, rows), h.kv.slots());
            }
            catch (Exception e) {
                // a rank closed by its test, or its leader gone: the leader's side reports it
            }
        }

        @Override
        public void close()
        {
            harness.close();
            leader.close();
            rankGroup.close();
            ranks.forEach(CompletableFuture::join);
        }
    }

    /** A collective that is never called: for shapes refused before any step. */
    private record FixedShard(int size)
            implements io.handoff.core.model.parallel.Collective
    {
        @Override
        public io.handoff.core.model.parallel.TensorShard shard()
        {
            return new io.handoff.core.model.parallel.TensorShard(0, size);
        }

        @Override
        public void allGather(float[] buf, io.handoff.core.model.parallel.Pieces pieces)
        {
            throw new AssertionError("no step runs");
        }

        @Override
        public void gather(float[] buf, io.handoff.core.model.parallel.Pieces pieces)
        {
            throw new AssertionError("no step runs");
        }
    }

    private static int[] tokens(int n, int seed)
    {
        return IntStream.range(0, n).map(i -> (i * 31 + seed * 17) % 250 + 3).toArray();
    }
}
