package io.handoff.core.runtime;

import com.typesafe.config.Config;
import io.handoff.spi.attention.KvDtype;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.model.parallel.TensorShard;

import java.util.Locale;

import static java.util.Objects.requireNonNull;

/**
 * The KV pool a model gets under a configuration: its geometry (layers, rows, element type, page size) and how many
 * pages {@code handoff.kv.pool-pages} or {@code handoff.kv.pool-memory} make. What the engine allocates, and what
 * {@code handoff config --json} and {@code handoff up} show before anything is allocated.
 */
public record KvSizing(KvGeometry geometry, int pages)
{
    static final int MAX_POOL_PAGES = 4_194_304;

    public KvSizing
    {
        requireNonNull(geometry, "geometry is null");
        if (pages < 1) {
            throw new IllegalArgumentException("pages must be at least 1, was " + pages);
        }
    }

    public static KvSizing of(Config config, ModelSource source)
    {
        return of(config, source, TensorShard.WHOLE);
    }

    /** The pool of one tensor-parallel rank: the KV heads it holds, {@code pool-memory} per rank. */
    public static KvSizing of(Config config, ModelSource source, TensorShard shard)
    {
        int pageSize = config.getInt("handoff.kv.page-size");
        KvGeometry geometry = KvGeometry.of(shard.attention(source.config().attentionGeometry()), source.config().layers(), dtype(config, source), pageSize);
        return new KvSizing(geometry, poolPages(config, geometry));
    }

    /** {@code handoff.kv.dtype}, with {@code auto} resolved for this model. */
    static KvDtype dtype(Config config, ModelSource source)
    {
        String setting = config.getString("handoff.kv.dtype");
        return setting.equals("auto") ? source.defaultKvDtype() : KvDtype.valueOf(setting.toUpperCase(Locale.ROOT));
    }

    /** {@code handoff.kv.pool-pages}, or as many pages as {@code handoff.kv.pool-memory} holds for this geometry. */
    static int poolPages(Config config, KvGeometry geometry)
    {
        long memory = config.getBytes("handoff.kv.pool-memory");
        if (memory == 0) {
            return config.getInt("handoff.kv.pool-pages");
        }
        long pages = memory / geometry.bytesPerPage();
        if (pages < 1) {
            throw new IllegalArgumentException("handoff.kv.pool-memory = " + memory + " bytes is less than one KV page of this model ("
                    + geometry.bytesPerPage() + " bytes: " + geometry.layers() + " layers x " + geometry.pageSize() + " tokens x "
                    + (geometry.keyRowBytes() + geometry.valueRowBytes()) + " bytes of K and V); raise it, or set it to 0 and use handoff.kv.pool-pages");
        }
        return (int) Math.min(pages, MAX_POOL_PAGES);
    }

    public int pageSize()
    {
        return geometry.pageSize();
    }

    public KvDtype dtype()
    {
        return geometry.dtype();
    }

    /** Bytes one token's K and V take in every layer. */
    public long bytesPerToken()
    {
        return geometry.bytesPerPage() / geometry.pageSize();
    }

    /** Bytes the pool allocates, alignment included. */
    public long poolBytes()
    {
        return geometry.footprintBytes(pages);
    }

    public long poolTokens()
    {
        return (long) pages * geometry.pageSize();
    }
}
