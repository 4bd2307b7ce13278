package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.model.ModelConfig;
import io.handoff.http.base.JsonFields;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The KV shape {@code /bootstrap} reports: a token's rows as the pool holds them, and the bytes a prefill sends per token. */
class KvShapeJsonTest
{
    @Test
    void aGqaTokenIsAKeyAndAValueRowPerKvHeadInEveryLayer()
    {
        ModelConfig gqa = ModelConfig.byName("tiny-gqa");

        JsonNode kv = shape(gqa, KvDtype.BF16, 64);

        assertThat(kv.get("layout").asText()).isEqualTo("GQA");
        assertThat(kv.get("heads").asInt()).isEqualTo(2);
        assertThat(kv.get("head_dim").asInt()).isEqualTo(32);
        assertThat(kv.get("v_head_dim").asInt()).isEqualTo(32);
        assertThat(kv.get("values_in_key_row").asBoolean()).isFalse();
        assertThat(kv.get("dtype").asText()).isEqualTo("BF16");
        // 4 layers x (2 heads x 32 of K + 2 heads x 32 of V) x 2 bytes
        assertThat(kv.get("bytes_per_token").asLong()).isEqualTo(4L * (64 + 64) * 2);
        assertThat(kv.get("bytes_per_page").asLong()).isEqualTo(64L * 4 * (64 + 64) * 2);
    }

    @Test
    void anMlaTokenIsOneLatentRowWhoseValueIsItsPrefix()
    {
        ModelConfig mla = ModelConfig.byName("tiny-mla");

        JsonNode kv = shape(mla, KvDtype.F32, 1);

        assertThat(kv.get("layout").asText()).isEqualTo("MLA");
        assertThat(kv.get("heads").asInt()).isEqualTo(1);
        assertThat(kv.get("head_dim").asInt()).isEqualTo(mla.kvLoraRank() + mla.qkRopeHeadDim());
        assertThat(kv.get("v_head_dim").asInt()).isEqualTo(mla.kvLoraRank());
        assertThat(kv.get("values_in_key_row").asBoolean()).isTrue();
        assertThat(kv.get("bytes_per_token").asLong()).isEqualTo((long) mla.layers() * (mla.kvLoraRank() + mla.qkRopeHeadDim()) * 4);
        assertThat(kv.get("bytes_per_page").asLong()).isEqualTo(kv.get("bytes_per_token").asLong());
    }

    @Test
    void aServerOfSeveralRanksSaysWhichKvHeadsEachHoldsAndCountsEveryRanksRow()
    {
        ModelConfig gqa = ModelConfig.byName("tiny-gqa");
        AttentionGeometry whole = gqa.attentionGeometry();
        int ranks = 2 * whole.numKvHeads();
        AttentionGeometry oneRank = new io.handoff.core.model.parallel.TensorShard(0, ranks).attention(whole);
        ObjectNode parent = JsonFields.MAPPER.createObjectNode();
        KvShapeJson.put(parent, whole, KvGeometry.of(oneRank, gqa.layers(), KvDtype.F32, 16), ranks);

        JsonNode layout = parent.get("layout");
        assertThat(layout.get("tp").asInt()).isEqualTo(ranks);
        assertThat(layout.get("kv_heads_per_rank").asInt()).isOne();
        // more ranks than KV heads: each head is held by two ranks in turn
        assertThat(layout.get("ranks")).hasSize(ranks);
        assertThat(layout.get("ranks").get(1).get("first_kv_head").asInt()).isZero();
        assertThat(layout.get("ranks").get(2).get("first_kv_head").asInt()).isOne();
        // a token's KV is every rank's row: a replicated head counted on each of its ranks
        assertThat(parent.get("kv").get("bytes_per_token").asLong()).isEqualTo((long) ranks * gqa.layers() * 2 * whole.qkDim() * 4);
    }

    private static JsonNode shape(ModelConfig model, KvDtype dtype, int pageSize)
    {
        ObjectNode parent = JsonFields.MAPPER.createObjectNode();
        KvShapeJson.put(parent, model.attentionGeometry(), KvGeometry.of(model.attentionGeometry(), model.layers(), dtype, pageSize));
        return parent.get("kv");
    }
}
