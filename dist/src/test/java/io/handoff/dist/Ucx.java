package io.handoff.dist;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The nixl backend loads libucp through FFM; without it a test of nixl is skipped, saying so. */
final class Ucx
{
    private Ucx() {}

    /** Skips the calling test when {@code backend} is nixl and libucp cannot be loaded here. */
    static void assumeLoadableFor(String backend)
    {
        if (!backend.equals("nixl")) {
            return;
        }
        boolean loads;
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup("libucp.so.0", arena);
            loads = true;
        }
        catch (IllegalArgumentException e) {
            loads = false;
        }
        assumeTrue(loads, "libucp.so.0 cannot be loaded here: the nixl backend needs UCX (install libucx0)");
    }
}
