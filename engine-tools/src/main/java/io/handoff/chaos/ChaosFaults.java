package io.handoff.chaos;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static java.util.Objects.requireNonNull;

/**
 * The fault rules ({@code handoff.debug.faults}) a soak gives its servers for {@code --fail-rate}: the rate split in
 * three equal parts, each choosing its own rooms by a seeded hash of the room id. On the prefills a part of the
 * transfers fails before its first page is read and a part stalls before each chunk, for {@code stall}, shorter than
 * every room deadline so a stall slows a transfer but never fails it; on the decodes a part of the rooms gets one bit of
 * a landed page flipped before its checksum is verified, which the checksum must catch.
 */
public record ChaosFaults(List<String> prefillRules, List<String> decodeRules)
{
    public ChaosFaults
    {
        prefillRules = List.copyOf(requireNonNull(prefillRules, "prefillRules is null"));
        decodeRules = List.copyOf(requireNonNull(decodeRules, "decodeRules is null"));
    }

    public static ChaosFaults of(double failRate, long seed, Duration stall)
    {
        if (!(failRate >= 0 && failRate <= 1)) {
            throw new IllegalArgumentException("--fail-rate must be in [0, 1], got " + failRate);
        }
        requireNonNull(stall, "stall is null");
        if (failRate == 0) {
            return new ChaosFaults(List.of(), List.of());
        }
        String part = rate(failRate / 3);
        List<String> prefill = new ArrayList<>();
        prefill.add("transfer-before-chunk rate=" + part + " seed=" + seed + " fail");
        prefill.add("transfer-before-chunk rate=" + part + " seed=" + (seed + 1) + " delay=" + stall.toMillis() + "ms");
        List<String> decode = List.of("decode-before-verify rate=" + part + " seed=" + (seed + 2) + " corrupt");
        return new ChaosFaults(prefill, decode);
    }

    private static String rate(double rate)
    {
        return String.format(Locale.ROOT, "%.6f", rate);
    }

    /** The {@code -D} argument that installs {@code rules}, as a HOCON list of strings; empty when there are none. */
    public static List<String> argument(List<String> rules)
    {
        if (rules.isEmpty()) {
            return List.of();
        }
        StringBuilder list = new StringBuilder("[");
        for (String rule : rules) {
            list.append(list.length() == 1 ? "" : ",").append('"').append(rule).append('"');
        }
        return List.of("-Dhandoff.debug.faults=" + list.append(']'));
    }
}
