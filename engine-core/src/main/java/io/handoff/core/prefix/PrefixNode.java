package io.handoff.core.prefix;

/**
 * Where a prefix match ended, as a handle for {@link PrefixCache#lock} and {@link PrefixCache#unlock}.
 * Opaque: only the cache that returned it can use it.
 */
public interface PrefixNode {}
