package io.handoff.router;

import io.handoff.cluster.MemberRole;

import java.util.Locale;

/** Which half of a disaggregated request a server runs; what its {@code GET /bootstrap} must report. */
public enum BackendRole
{
    PREFILL,
    DECODE;

    /** As the servers spell it ({@code "prefill"}, {@code "decode"}) and as the command line's option is named. */
    public String label()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    static BackendRole of(MemberRole role)
    {
        return switch (role) {
            case PREFILL -> PREFILL;
            case DECODE -> DECODE;
        };
    }
}
