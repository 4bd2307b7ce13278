package io.handoff.core.runtime;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.SeededCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KvPoolSizingTest
{
    // 2 layers x 16 tokens x (8 + 8 elements) x 2 bytes = 1024 bytes a page
    private static final KvGeometry GEOMETRY = new KvGeometry(2, 8, 8, false, KvDtype.F16, 16);

    private static Config kv(String poolMemory)
    {
        return ConfigFactory.parseString("handoff.kv { pool-pages = 7, pool-memory = " + poolMemory + " }");
    }

    @Test
    void withoutAPoolMemoryThePageCountDecides()
    {
        assertThat(GEOMETRY.bytesPerPage()).isEqualTo(1024);
        assertThat(KvSizing.poolPages(kv("0"), GEOMETRY)).isEqualTo(7);
    }

    @Test
    void aPoolMemoryHoldsAsManyWholePagesAsTheModelsGeometryFits()
    {
        assertThat(KvSizing.poolPages(kv("1MiB"), GEOMETRY)).isEqualTo(1024);
        assertThat(KvSizing.poolPages(kv("2047"), GEOMETRY)).isEqualTo(1);
    }

    @Test
    void aPoolMemoryBelowOnePageIsRefusedWithThePageSize()
    {
        assertThatThrownBy(() -> KvSizing.poolPages(kv("1000"), GEOMETRY))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("handoff.kv.pool-memory = 1000 bytes is less than one KV page of this model (1024 bytes");
    }

    @Test
    void autoGivesACheckpointAnF16PoolAndTheSeededModelsF32(@TempDir Path dir)
    {
        ModelConfig tiny = SeededCheckpoint.config("tiny", 1L, false);
        try (ModelSource seeded = new ModelSource(tiny, new SyntheticWeights(1L), new ByteTokenizer())) {
            assertThat(seeded.defaultKvDtype()).isEqualTo(KvDtype.F32);
        }
        SeededCheckpoint.write(dir.resolve("ckpt"), 1L, false);
        try (ModelSource checkpoint = ModelSource.open(dir.resolve("ckpt"), 2048)) {
            assertThat(checkpoint.defaultKvDtype()).isEqualTo(KvDtype.F16);
        }
    }
}
