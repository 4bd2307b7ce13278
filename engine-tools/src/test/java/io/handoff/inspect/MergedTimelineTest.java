package io.handoff.inspect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Merging the timelines of a router, a prefill and a decode: alignment, where the time went, the KV verdict, and the printed forms. */
class MergedTimelineTest
{
    private static final long T0 = 1_700_000_000_000_000L;

    /** A node whose first entry is at {@code start} (epoch µs); entries as (event, offset µs, detail). */
    private static NodeTimeline node(String role, String url, String host, long start, Object... entries)
    {
        List<NodeTimeline.Entry> list = new ArrayList<>();
        for (int i = 0; i < entries.length; i += 3) {
            long offset = (Long) entries[i + 1];
            list.add(new NodeTimeline.Entry((String) entries[i], start + offset, offset, (String) entries[i + 2]));
        }
        return new NodeTimeline(url, role, host, 1, "r1", start, true, 0, list);
    }

    private static List<NodeTimeline> cluster(String decodeHost, Object... decodeTail)
    {
        NodeTimeline router = node("router", "http://r:1", "h1", T0,
                "received", 0L, "path=/generate", "paired", 10L, "", "sent", 20L, "to=prefill", "sent", 30L, "to=decode",
                "routed", 9_000L, "status=200");
        NodeTimeline prefill = node("prefill", "http://p:2", "h1", T0 + 100,
                "queued", 0L, "", "admitted", 50L, "", "forward_done", 1_050L, "step=0 tokens=0..16",
                "bootstrap", 1_500L, "decode_pages=2", "forward_done", 2_050L, "step=1 tokens=16..20 last",
                "plan_posted", 2_100L, "chunk=0 pages=2 runs=1 bytes=4096 early", "plan_landed", 2_600L, "chunk=0 pages=2 runs=1 bytes=4096",
                "aux_sent", 2_650L, "first_token=7 checksums=2", "done", 2_700L, "reason=length");
        List<Object> decode = new ArrayList<>(List.of("queued", 0L, "", "admitted", 40L, "", "bootstrap", 1_300L, "pages_advertised=2",
                "chunk_landed", 2_680L, "chunk=0 pages=2 bytes=4096"));
        decode.addAll(List.of(decodeTail));
        return List.of(router, prefill, node("decode", "http://d:3", decodeHost, T0 + 120, decode.toArray()));
    }

    private static List<NodeTimeline> verifiedCluster(String decodeHost)
    {
        return cluster(decodeHost, "checksums_verified", 2_700L, "pages=2", "commit", 2_710L, "pages=2",
                "first_token", 2_800L, "token=7", "done", 8_800L, "reason=length");
    }

    @Test
    void everyEventOfEveryNodeLandsOnOneAxisInTimeOrder()
    {
        MergedTimeline merged = MergedTimeline.merge("r1", verifiedCluster("h1"));

        assertThat(merged.lines()).extracting(MergedTimeline.Line::offsetMicros).isSorted();
        assertThat(merged.lines().getFirst().entry().event()).isEqualTo("received");
        assertThat(merged.lines().getFirst().offsetMicros()).isZero();
        // the prefill's queued (T0+100) before the decode's queued (T0+120), both after the router's sends (T0+30)
        List<String> firstSix = merged.lines().stream().limit(6).map(l -> l.node().role() + ":" + l.entry().event()).toList();
        assertThat(firstSix).containsExactly("router:received", "router:paired", "router:sent", "router:sent", "prefill:queued", "decode:queued");
        assertThat(merged.lines().getLast().entry().event()).isEqualTo("routed");
        assertThat(merged.spanMicros()).isEqualTo(9_000);
        assertThat(merged.lines()).hasSize(5 + 9 + 8);
        assertThat(merged.clockNote()).isEmpty();
    }

    @Test
    void aNodesOwnOrderHoldsEvenWhenItsWallClockStepsBack()
    {
        // the entries' wall times say the second came first (an NTP step); their monotonic offsets say otherwise
        NodeTimeline stepped = new NodeTimeline("http://p:2", "prefill", "h1", 1, "r1", T0, true, 0, List.of(
                new NodeTimeline.Entry("queued", T0, 0, ""),
                new NodeTimeline.Entry("admitted", T0 - 5_000, 100, ""),
                new NodeTimeline.Entry("done", T0 - 4_000, 300, "reason=length")));

        MergedTimeline merged = MergedTimeline.merge("r1", List.of(stepped));

        assertThat(merged.lines()).extracting(line -> line.entry().event()).containsExactly("queued", "admitted", "done");
        assertThat(merged.lines()).extracting(MergedTimeline.Line::offsetMicros).containsExactly(0L, 100L, 300L);
    }

    @Test
    void theSummarySaysWhereTheTimeWentOnThePath()
    {
        MergedTimeline merged = MergedTimeline.merge("r1", verifiedCluster("h1"));

        Map<String, Long> phases = merged.phases().stream().collect(Collectors.toMap(MergedTimeline.Phase::name, MergedTimeline.Phase::micros));
        assertThat(phases).containsEntry("router to prefill", 100L)
                .containsEntry("queue", 50L)
                .containsEntry("prefill compute", 2_000L)
                // the decode's pages reached the prefill (1500) before its last forward (2050)
                .containsEntry("waiting for the decode", 0L)
                .containsEntry("transfer", 550L)
                // prefill's last plan landed at T0+2700, the decode committed at T0+120+2710
                .containsEntry("commit", 130L)
                .containsEntry("decode queue (in parallel)", 40L)
                .containsEntry("commit to first token", 90L)
                .containsEntry("decode", 6_000L);
        assertThat(merged.transfer()).isEqualTo(new MergedTimeline.Transfer(1, 1, 0, 4096, 1));
        assertThat(merged.kv().status()).isEqualTo(MergedTimeline.KvStatus.VERIFIED);
        assertThat(merged.kv().detail()).contains("checksums of 2 page(s)");
    }

    @Test
    void aDecodeThatWaitedForThePrefillShowsAsWaitingForTheDecodeOnlyWhenThePagesCameLate()
    {
        NodeTimeline prefill = node("prefill", "http://p:2", "h1", T0, "queued", 0L, "", "admitted", 10L, "",
                "forward_done", 110L, "last", "bootstrap", 410L, "decode_pages=1", "plan_posted", 420L, "bytes=10", "plan_landed", 510L, "bytes=10");

        MergedTimeline merged = MergedTimeline.merge("r1", List.of(prefill));

        assertThat(merged.phases()).filteredOn(phase -> phase.name().equals("waiting for the decode"))
                .extracting(MergedTimeline.Phase::micros).containsExactly(300L);
        assertThat(merged.phases()).filteredOn(phase -> phase.name().equals("transfer")).extracting(MergedTimeline.Phase::micros).containsExactly(100L);
        assertThat(merged.kv().status()).isEqualTo(MergedTimeline.KvStatus.UNKNOWN);
        assertThat(merged.kv().detail()).contains("add the decode's URL");
    }

    @Test
    void aChecksumMismatchIsTheVerdictWithTheDecodesOwnWords()
    {
        MergedTimeline merged = MergedTimeline.merge("r1", cluster("h1",
                "checksum_mismatch", 2_700L, "error=KV checksum mismatch on room page 1 (decode page 9)",
                "failed", 2_800L, "reason=error cause=checksum_mismatch"));

        assertThat(merged.kv().status()).isEqualTo(MergedTimeline.KvStatus.MISMATCH);
        assertThat(merged.kv().detail()).isEqualTo("error=KV checksum mismatch on room page 1 (decode page 9)");
        assertThat(TimelineText.text(merged)).contains("KV: mismatch: error=KV checksum mismatch on room page 1");
    }

    @Test
    void aRetriedRequestIsSummedUpByItsLastAttemptAndTheEarlierMismatchIsNamed()
    {
        NodeTimeline decode = node("decode", "http://d:3", "h1", T0,
                "queued", 0L, "", "admitted", 10L, "", "checksum_mismatch", 500L, "error=KV checksum mismatch on room page 0",
                "failed", 600L, "reason=error cause=checksum_mismatch",
                "queued", 1_000L, "retry", "admitted", 1_030L, "", "checksums_verified", 1_500L, "pages=2", "commit", 1_501L, "pages=2",
                "first_token", 1_600L, "token=7", "done", 2_600L, "reason=length");

        MergedTimeline merged = MergedTimeline.merge("r1", List.of(decode));

        assertThat(merged.kv().status()).isEqualTo(MergedTimeline.KvStatus.VERIFIED);
        assertThat(merged.kv().detail()).endsWith("(after 1 earlier attempt(s) with a checksum mismatch)");
        assertThat(merged.phases()).filteredOn(phase -> phase.name().equals("decode queue (in parallel)"))
                .extracting(MergedTimeline.Phase::micros).containsExactly(30L);
        assertThat(merged.lines()).hasSize(10);
    }

    @Test
    void nodesOnDifferentHostsGetTheClockCaveat()
    {
        MergedTimeline merged = MergedTimeline.merge("r1", verifiedCluster("h2"));

        assertThat(merged.clockNote()).hasValueSatisfying(note -> assertThat(note).contains("different hosts (h1, h2)", "clock sync"));
        assertThat(TimelineText.text(merged)).contains("note: the nodes run on different hosts (h1, h2)");
    }

    @Test
    void theTextHasOneLinePerEventThenTheSummary()
    {
        MergedTimeline merged = MergedTimeline.merge("r1", verifiedCluster("h1"));

        List<String> lines = TimelineText.text(merged).lines().toList();
        assertThat(lines.getFirst()).isEqualTo("request r1: 22 events on 3 node(s), 9.000 ms from the first to the last");
        assertThat(lines.get(1)).matches(" +\\+0\\.000 ms  router http://r:1 +received +path=/generate");
        assertThat(lines.get(5)).matches(" +\\+0\\.100 ms  prefill http://p:2 +queued");
        assertThat(lines.get(23)).isEqualTo("where the time went:");
        assertThat(lines).anySatisfy(line -> assertThat(line).matches("  prefill compute +2\\.000 ms  \\(prefill\\)"));
        assertThat(lines).contains("  transfer: 1 plan(s) posted (1 before their forward finished), 1 landed, 0 failed, 4096 bytes landed");
        assertThat(lines.getLast()).startsWith("KV: verified: the decode verified the checksums of 2 page(s)");
    }

    @Test
    void theJsonFormCarriesNodesEventsPhasesAndTheVerdict()
    {
        ObjectMapper mapper = new ObjectMapper();
        JsonNode json = TimelineText.json(MergedTimeline.merge("r1", verifiedCluster("h1")), mapper);

        assertThat(json.get("rid").asText()).isEqualTo("r1");
        assertThat(json.get("nodes")).hasSize(3);
        assertThat(json.get("events")).hasSize(22);
        assertThat(json.get("events").get(4).get("role").asText()).isEqualTo("prefill");
        assertThat(json.get("events").get(4).get("offset_us").asLong()).isEqualTo(100);
        assertThat(json.get("kv").get("status").asText()).isEqualTo("verified");
        assertThat(json.get("transfer").get("bytes_landed").asLong()).isEqualTo(4096);
        assertThat(json.has("clock_note")).isFalse();
    }

    @Test
    void nothingToMergeIsAnError()
    {
        assertThatThrownBy(() -> MergedTimeline.merge("r1", List.of())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("r1");
    }
}
