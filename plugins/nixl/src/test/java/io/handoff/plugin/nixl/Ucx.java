package io.handoff.plugin.nixl;

import io.handoff.testkit.transfer.ReferenceSettings;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Whether this machine can run UCX in this JVM; tests that need it are skipped, with the reason, when it cannot. */
final class Ucx
{
    private Ucx() {}

    static void assumeAvailable()
    {
        UcxLibrary.Probe probe = UcxLibrary.probe(ReferenceSettings.of(new NixlProvider()).defaults().getString("library"), System.getenv("UCX_ERROR_SIGNALS"));
        assumeTrue(probe.version().isPresent(), () -> "UCX is not usable here (install libucx0 and run with UCX_ERROR_SIGNALS=): "
                + probe.failure());
    }
}
