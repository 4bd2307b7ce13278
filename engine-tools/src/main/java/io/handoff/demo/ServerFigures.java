package io.handoff.demo;

import java.util.List;
import java.util.OptionalDouble;
import java.util.OptionalInt;

import static java.util.Objects.requireNonNull;

/**
 * What the demo read from its servers after the last request: KV bytes the prefills sent and the time
 * they spent sending, pages not given back on each side, and the prefill's bootstrap answer. A figure no
 * server exported is empty, and the report prints it as null.
 *
 * @param leakedPrefillPages over all prefills: pages neither free nor held by the prefix cache once idle
 * @param leakedDecodePages the same over all decodes
 * @param promptTokens over all prefills: prompt tokens of the requests they admitted (the warm-up's too), each of whose KV
 *         they send once
 * @param kvBytesPerDecodeRank over all decodes: the KV bytes their tensor-parallel rank {@code r} received, at index {@code r}
 */
public record ServerFigures(
        OptionalDouble kvBytesTransferred,
        OptionalDouble transferBusySeconds,
        OptionalInt leakedPrefillPages,
        OptionalInt leakedDecodePages,
        BootstrapInfo bootstrap,
        OptionalDouble earlyBytes,
        OptionalDouble kvReadySeconds,
        OptionalDouble kvReadyRooms,
        OptionalDouble promptTokens,
        List<Double> kvBytesPerDecodeRank)
{
    public static final ServerFigures UNKNOWN = new ServerFigures(OptionalDouble.empty(), OptionalDouble.empty(), OptionalInt.empty(),
            OptionalInt.empty(), BootstrapInfo.UNKNOWN);

    public ServerFigures(OptionalDouble kvBytesTransferred, OptionalDouble transferBusySeconds, OptionalInt leakedPrefillPages,
            OptionalInt leakedDecodePages, BootstrapInfo bootstrap)
    {
        this(kvBytesTransferred, transferBusySeconds, leakedPrefillPages, leakedDecodePages, bootstrap, OptionalDouble.empty(),
                OptionalDouble.empty(), OptionalDouble.empty(), OptionalDouble.empty(), List.of());
    }

    /** Mean time from a room's last chunk forward completing to its KV being in the decode's memory, in ms. */
    public OptionalDouble kvReadyAfterForwardMs()
    {
        if (kvReadySeconds.isEmpty() || kvReadyRooms.isEmpty() || !(kvReadyRooms.getAsDouble() > 0)) {
            return OptionalDouble.empty();
        }
        return OptionalDouble.of(kvReadySeconds.getAsDouble() / kvReadyRooms.getAsDouble() * 1000);
    }

    public ServerFigures
    {
        kvBytesPerDecodeRank = List.copyOf(kvBytesPerDecodeRank);
        requireNonNull(kvBytesTransferred, "kvBytesTransferred is null");
        requireNonNull(transferBusySeconds, "transferBusySeconds is null");
        requireNonNull(leakedPrefillPages, "leakedPrefillPages is null");
        requireNonNull(leakedDecodePages, "leakedDecodePages is null");
        requireNonNull(bootstrap, "bootstrap is null");
        requireNonNull(earlyBytes, "earlyBytes is null");
        requireNonNull(kvReadySeconds, "kvReadySeconds is null");
        requireNonNull(kvReadyRooms, "kvReadyRooms is null");
        requireNonNull(promptTokens, "promptTokens is null");
    }

    /**
     * KV bytes sent per prompt token the prefills admitted: one token's KV in every layer when a page holds one token,
     * more with larger pages (a prompt's last page goes whole); empty without both figures or without a prompt token.
     */
    public OptionalDouble kvBytesPerPromptToken()
    {
        if (kvBytesTransferred.isEmpty() || promptTokens.isEmpty() || !(promptTokens.getAsDouble() > 0)) {
            return OptionalDouble.empty();
        }
        return OptionalDouble.of(kvBytesTransferred.getAsDouble() / promptTokens.getAsDouble());
    }

    /** Bytes per busy second, in GB/s (1e9); empty without both figures or when nothing was busy. */
    public OptionalDouble transferGbps()
    {
        if (kvBytesTransferred.isEmpty() || transferBusySeconds.isEmpty() || !(transferBusySeconds.getAsDouble() > 0)) {
            return OptionalDouble.empty();
        }
        return OptionalDouble.of(kvBytesTransferred.getAsDouble() / transferBusySeconds.getAsDouble() / 1e9);
    }
}
