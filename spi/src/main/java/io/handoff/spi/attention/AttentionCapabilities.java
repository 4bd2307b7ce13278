package io.handoff.spi.attention;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * What an attention backend supports. The core refuses a model whose layout, page size or dtype a
 * backend does not declare, instead of running it and hoping.
 *
 * @param splitKv decode splits each sequence's keys into independently reduced parts
 * @param deterministic outputs are bit-identical across runs, batch compositions and prompt chunkings
 * @param arithmetics the {@link AttentionArithmetic}s it computes
 */
public record AttentionCapabilities(
        Set<KvLayout> layouts,
        int minPageSize,
        int maxPageSize,
        Set<KvDtype> dtypes,
        boolean splitKv,
        boolean deterministic,
        Set<AttentionArithmetic> arithmetics)
{
    public AttentionCapabilities
    {
        layouts = Set.copyOf(requireNonNull(layouts, "layouts is null"));
        dtypes = Set.copyOf(requireNonNull(dtypes, "dtypes is null"));
        arithmetics = Set.copyOf(requireNonNull(arithmetics, "arithmetics is null"));
        if (!arithmetics.contains(AttentionArithmetic.F32)) {
            throw new IllegalArgumentException("every attention backend computes the F32 arithmetic");
        }
        if (minPageSize < 1 || maxPageSize < minPageSize) {
            throw new IllegalArgumentException("bad page size range " + minPageSize + ".." + maxPageSize);
        }
    }

    /** A backend that computes {@link AttentionArithmetic#F32} only. */
    public AttentionCapabilities(Set<KvLayout> layouts, int minPageSize, int maxPageSize, Set<KvDtype> dtypes, boolean splitKv, boolean deterministic)
    {
        this(layouts, minPageSize, maxPageSize, dtypes, splitKv, deterministic, Set.of(AttentionArithmetic.F32));
    }

    public boolean supports(KvLayout layout, int pageSize, KvDtype dtype)
    {
        return refusal("", layout, pageSize, dtype).isEmpty();
    }

    /** Why attention backend {@code id} cannot run a KV cache of this layout, page size and dtype; empty when it can. */
    public Optional<String> refusal(String id, KvLayout layout, int pageSize, KvDtype dtype)
    {
        return refusal(id, layout, pageSize, dtype, AttentionArithmetic.F32);
    }

    /** Why attention backend {@code id} cannot run this geometry's layout and arithmetic over a pool of this page size and dtype; empty when it can. */
    public Optional<String> refusal(String id, AttentionGeometry geometry, int pageSize, KvDtype dtype)
    {
        return refusal(id, geometry.layout(), pageSize, dtype, geometry.arithmetic());
    }

    private Optional<String> refusal(String id, KvLayout layout, int pageSize, KvDtype dtype, AttentionArithmetic arithmetic)
    {
        if (!arithmetics.contains(arithmetic)) {
            return Optional.of("attention backend '" + id + "' does not compute the " + arithmetic + " arithmetic; it computes " + sorted(arithmetics)
                    + " (set handoff.attention.arithmetic = f32, or choose a backend that computes it)");
        }
        if (!layouts.contains(layout)) {
            return Optional.of("attention backend '" + id + "' does not support the " + layout + " layout; it supports " + sorted(layouts));
        }
        if (pageSize < minPageSize || pageSize > maxPageSize) {
            return Optional.of("attention backend '" + id + "' supports page sizes " + minPageSize + ".." + maxPageSize + ", not " + pageSize
                    + ": choose a page size in that range");
        }
        if (!dtypes.contains(dtype)) {
            return Optional.of("attention backend '" + id + "' does not support KV dtype " + dtype + "; it supports " + sorted(dtypes));
        }
        return Optional.empty();
    }

    private static <E extends Enum<E>> List<E> sorted(Set<E> values)
    {
        return values.stream().sorted().toList();
    }

    /** The capabilities as names, in a stable order: layouts, dtypes, arithmetics beyond F32, page sizes, then flags. */
    public List<String> names()
    {
        List<String> names = new ArrayList<>();
        for (KvLayout layout : KvLayout.values()) {
            if (layouts.contains(layout)) {
                names.add(layout.name());
            }
        }
        for (KvDtype dtype : KvDtype.values()) {
            if (dtypes.contains(dtype)) {
                names.add(dtype.name());
            }
        }
        for (AttentionArithmetic arithmetic : AttentionArithmetic.values()) {
            if (arithmetic != AttentionArithmetic.F32 && arithmetics.contains(arithmetic)) {
                names.add(arithmetic.name());
            }
        }
        names.add("PAGE_SIZE_" + minPageSize + "_" + maxPageSize);
        if (splitKv) {
            names.add("SPLIT_KV");
        }
        if (deterministic) {
            names.add("DETERMINISTIC");
        }
        return List.copyOf(names);
    }
}
