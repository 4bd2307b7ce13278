package io.handoff.core.disagg.control;

import io.handoff.core.disagg.control.ControlMessage.Hello;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.Role;
import io.handoff.core.kv.KvGeometry;
import io.handoff.spi.attention.AttentionArithmetic;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class CompatibilityTest
{
    static final Compatibility HERE = Compatibility.of("tiny-mla", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));

    @Test
    void describesTheKvPoolAtTheCurrentProtocolVersion()
    {
        assertThat(HERE).isEqualTo(new Compatibility("tiny-mla", "seed:42", "MLA 2 layers, key row 12, value row 8 (in key row)", "BF16", 16,
                ControlMessage.PROTOCOL_VERSION));
    }

    @Test
    void equalSidesMatchAndHashEqually()
    {
        Compatibility peer = Compatibility.of("tiny-mla", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));
        assertThat(HERE.mismatch(peer)).isEmpty();
        assertThat(HERE.hash()).isEqualTo(peer.hash()).hasSize(32);
    }

    @Test
    void mismatchNamesEveryDifferingFieldWithBothValues()
    {
        Compatibility peer = Compatibility.of("tiny-gqa", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.F32, 32));

        assertThat(HERE.mismatch(peer)).contains("incompatible peer: model is 'tiny-mla' here but 'tiny-gqa' on the peer; "
                + "KV dtype is 'BF16' here but 'F32' on the peer; page size is '16' here but '32' on the peer. "
                + "Prefill and decode must serve the same model and weights with the same KV layout, dtype and page size.");
        assertThat(HERE.hash()).isNotEqualTo(peer.hash());
    }

    /** Attention's arithmetic changes what a prefill writes into later layers: peers that attend differently do not pair. */
    @Test
    void aPeerThatAttendsInAnotherArithmeticIsRefused()
    {
        KvGeometry geometry = new KvGeometry(2, 12, 8, true, KvDtype.F32, 16);
        Compatibility f32 = Compatibility.of("m", "w", KvLayout.GQA, geometry);
        Compatibility llamaCpp = Compatibility.of("m", "w", KvLayout.GQA, geometry, AttentionArithmetic.LLAMA_CPP_F16);
        assertThat(Compatibility.of("m", "w", KvLayout.GQA, geometry, AttentionArithmetic.F32)).isEqualTo(f32);
        assertThat(f32.mismatch(llamaCpp)).get().asString().contains("KV layout is").contains("attention LLAMA_CPP_F16' on the peer");
        assertThat(f32.hash()).isNotEqualTo(llamaCpp.hash());
    }

    @Test
    void everyFieldTakesPartInTheComparisonAndTheHash()
    {
        Compatibility[] variants = {
                new Compatibility("m2", "w", "l", "d", 16, 1),
                new Compatibility("m", "w2", "l", "d", 16, 1),
                new Compatibility("m", "w", "l2", "d", 16, 1),
                new Compatibility("m", "w", "l", "d2", 16, 1),
                new Compatibility("m", "w", "l", "d", 17, 1),
                new Compatibility("m", "w", "l", "d", 16, 2)};
        Compatibility base = new Compatibility("m", "w", "l", "d", 16, 1);
        String[] fields = {"model", "weights", "KV layout", "KV dtype", "page size", "protocol version"};
        for (int i = 0; i < variants.length; i++) {
            assertThat(base.mismatch(variants[i])).get().asString().startsWith("incompatible peer: " + fields[i] + " is ");
            assertThat(base.hash()).isNotEqualTo(variants[i].hash());
        }
    }

    @Test
    void helloIsJudgedOnProtocolVersionRoleAndCompatibility()
    {
        assertThat(HERE.judge(new Hello(ControlMessage.PROTOCOL_VERSION, "d1", Role.DECODE, HERE), Role.DECODE)).isEqualTo(HelloResult.ACCEPTED);
        assertThat(HERE.judge(new Hello(ControlMessage.PROTOCOL_VERSION + 1, "d1", Role.DECODE, HERE), Role.DECODE).reason())
                .isEqualTo("protocol version is " + ControlMessage.PROTOCOL_VERSION + " here but " + (ControlMessage.PROTOCOL_VERSION + 1)
                        + " on peer d1: run the same Handoff version on both sides");
        assertThat(HERE.judge(new Hello(ControlMessage.PROTOCOL_VERSION, "p2", Role.PREFILL, HERE), Role.DECODE).reason())
                .isEqualTo("peer p2 is a PREFILL, expected a DECODE");
        HelloResult refused = HERE.judge(new Hello(ControlMessage.PROTOCOL_VERSION, "d1", Role.DECODE,
                new Compatibility("tiny-mla", "seed:43", HERE.kvLayout(), "BF16", 16, 1)), Role.DECODE);
        assertThat(refused.accepted()).isFalse();
        assertThat(refused.reason()).contains("weights is 'seed:42' here but 'seed:43' on the peer").endsWith("(peer d1)");
    }
}
