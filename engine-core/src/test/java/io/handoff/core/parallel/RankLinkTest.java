package io.handoff.core.parallel;

import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.parallel.Pieces;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.core.security.ClusterSecret;
import io.handoff.core.security.ClusterSecurity;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The wire between ranks: step plans survive the trip or are refused with the reason, and only the secret's holders join. */
class RankLinkTest
{
    private static final int[] SIZES = {64, (int) (SharedExchange.SLOT_BYTES / 4 * 2 + 64)};

    private static ForwardBatch batch()
    {
        return ForwardBatch.builder().extend(new int[] {5, 6, 7}, 0, new int[] {9, 3, 4, 8}).decode(11, 2, new int[] {1, 2, 0})
                .build(length -> 1);
    }

    @Test
    void aStepPlanRoundTripsExactly()
            throws IOException
    {
        ForwardBatch batch = batch().withOwners(new int[] {1, 0});
        int[] rows = {2, 0, 3};
        ByteBuffer buffer = ByteBuffer.allocate(StepCodec.size(batch, rows)).order(ByteOrder.LITTLE_ENDIAN);
        StepCodec.write(batch, rows, buffer);
        StepCodec.Step step = StepCodec.read(buffer.flip(), 16, 2);
        assertThat(step.batch().tokens()).containsExactly(batch.tokens());
        assertThat(step.batch().slots()).containsExactly(batch.slots());
        assertThat(step.batch().decode().kvIndices()).containsExactly(batch.decode().kvIndices());
        assertThat(step.batch().extend().qoIndptr()).containsExactly(batch.extend().qoIndptr());
        assertThat(step.logitRows()).containsExactly(rows);
        assertThat(step.batch().owners()).containsExactly(1, 0);
    }

    @Test
    void aPlanNamingASlotOutsideThePoolALengthBeyondTheFrameOrInconsistentMetadataIsRefused()
    {
        ForwardBatch batch = batch();
        int[] rows = {0};
        ByteBuffer buffer = ByteBuffer.allocate(StepCodec.size(batch, rows)).order(ByteOrder.LITTLE_ENDIAN);
        StepCodec.write(batch, rows, buffer);
        byte[] bytes = Arrays.copyOf(buffer.array(), buffer.capacity());
        assertThatThrownBy(() -> StepCodec.read(ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN), 9, 2))
                .hasMessageContaining("names KV slot 9; this rank's pool has 9");
        byte[] long1 = bytes.clone();
        ByteBuffer.wrap(long1).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 1 << 28);
        assertThatThrownBy(() -> StepCodec.read(ByteBuffer.wrap(long1).order(ByteOrder.LITTLE_ENDIAN), 16, 2))
                .hasMessageContaining("claims 268435456 values");
        // the first token's position: the metadata says 0
        byte[] moved = bytes.clone();
        ByteBuffer.wrap(moved).order(ByteOrder.LITTLE_ENDIAN).putInt(4 * (1 + 4 + 1), 1);
        assertThatThrownBy(() -> StepCodec.read(ByteBuffer.wrap(moved).order(ByteOrder.LITTLE_ENDIAN), 16, 2))
                .hasMessageContaining("a step plan is inconsistent");
        byte[] shortened = Arrays.copyOf(bytes, bytes.length - 4);
        assertThatThrownBy(() -> StepCodec.read(ByteBuffer.wrap(shortened).order(ByteOrder.LITTLE_ENDIAN), 16, 2))
                .isInstanceOf(IOException.class);
        // the last value is the last request's owner: a rank the group does not have
        byte[] stranger = bytes.clone();
        ByteBuffer.wrap(stranger).order(ByteOrder.LITTLE_ENDIAN).putInt(stranger.length - 4, 2);
        assertThatThrownBy(() -> StepCodec.read(ByteBuffer.wrap(stranger).order(ByteOrder.LITTLE_ENDIAN), 16, 2))
                .hasMessageContaining("gives a request to rank 2 of 2");
    }

    @Test
    void aMalformedHelloIsRefusedAndTheGroupStillFormsWithTheRealRank()
            throws Exception
    {
        CompletableFuture<Integer> malformed = new CompletableFuture<>();
        RankLauncher launcher = (rank, leader) -> {
            Thread.ofPlatform().daemon().start(() -> {
                int colon = leader.lastIndexOf(':');
                try (java.net.Socket raw = new java.net.Socket(leader.substring(0, colon), Integer.parseInt(leader.substring(colon + 1)))) {
                    // a hello frame of two bytes: no room for a rank and a pid
                    raw.getOutputStream().write(ByteBuffer.allocate(10).order(ByteOrder.LITTLE_ENDIAN).putInt(RankLink.HELLO).putInt(2).array());
                    malformed.complete(raw.getInputStream().read());
                }
                catch (IOException e) {
                    malformed.complete(-2);
                }
                try (RankWorker worker = RankWorker.join(leader, rank, "m", ClusterSecurity.loopbackOnly(), Duration.ofSeconds(10), Duration.ofSeconds(10),
                        1 << 20)) {
                    worker.ready();
                    worker.awaitShutdown();
                }
                catch (IOException | RuntimeException e) {
                    // the group's start says what went wrong
                }
            });
            return Optional.empty();
        };
        try (RankGroup group = RankGroup.start(new RankGroup.Settings(2, "127.0.0.1", 0, ClusterSecurity.loopbackOnly(), Duration.ofSeconds(30),
                Duration.ofSeconds(30), Duration.ofSeconds(30), 1 << 20, "m", 4, Optional.empty()), launcher)) {
            assertThat(group.ranks()).extracting(RankGroup.RankStatus::healthy).containsExactly(true, true);
        }
        // the leader closed the malformed connection without answering it
        assertThat(malformed.get()).isEqualTo(-1);
    }

    @Test
    void onlyARankWithTheClusterSecretJoinsAndItsGatherAuthenticatedCarriesTheValues()
            throws Exception
    {
        ClusterSecret secret = ClusterSecret.of("0123456789abcdef0123456789abcdef".getBytes());
        ClusterSecurity security = ClusterSecurity.withSecret(secret);
        ClusterSecurity wrong = ClusterSecurity.withSecret(ClusterSecret.of("fedcba9876543210fedcba9876543210".getBytes()));
        CompletableFuture<String> refused = new CompletableFuture<>();
        CompletableFuture<float[]> gathered = new CompletableFuture<>();
        RankLauncher launcher = (rank, leader) -> {
            Thread.ofPlatform().daemon().start(() -> {
                try (RankWorker impostor = RankWorker.join(leader, rank, "m", wrong, Duration.ofSeconds(10), Duration.ofSeconds(10), 1 << 20)) {
                    refused.complete("joined as rank " + impostor.shard().rank());
                }
                catch (IOException e) {
                    refused.complete(e.getMessage());
                }
                try (RankWorker worker = RankWorker.join(leader, rank, "m", security, Duration.ofSeconds(10), Duration.ofSeconds(10), 1 << 28)) {
                    worker.ready();
                    for (int n : SIZES) {
                        float[] buf = new float[n];
                        Arrays.fill(buf, n / 2, n, 2f);
                        worker.allGather(buf, Pieces.columns(1, n, 0, new TensorShard(1, 2).bounds(n, 16)));
                        gathered.complete(buf);
                    }
                    worker.awaitShutdown();
                }
                catch (IOException | RuntimeException e) {
                    gathered.completeExceptionally(e);
                }
            });
            return Optional.empty();
        };
        try (RankGroup group = RankGroup.start(new RankGroup.Settings(2, "127.0.0.1", 0, security, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30),
                1 << 28, "m", 4, Optional.empty()), launcher)) {
            for (int n : SIZES) {
                float[] buf = new float[n];
                Arrays.fill(buf, 0, n / 2, 1f);
                Pieces pieces = Pieces.columns(1, n, 0, group.shard().bounds(n, 16));
                // the small array through the shared mapping, the large one (a piece over a slot) over the authenticated link
                assertThat(group.sharesMemory(pieces)).isEqualTo(n == SIZES[0]);
                group.allGather(buf, pieces);
                float[] expected = new float[n];
                Arrays.fill(expected, 0, n / 2, 1f);
                Arrays.fill(expected, n / 2, n, 2f);
                assertThat(Arrays.mismatch(buf, expected)).as("the first value that differs, of %d", n).isEqualTo(-1);
            }
            assertThat(gathered.get()).hasSize(SIZES[0]);
        }
        assertThat(refused.get()).contains("cluster secrets differ");
    }
}
