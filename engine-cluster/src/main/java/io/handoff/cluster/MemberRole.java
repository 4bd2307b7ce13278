package io.handoff.cluster;

import java.util.Locale;
import java.util.Optional;

/** What a member does in a PD deployment. Colocated servers take no part in membership. */
public enum MemberRole
{
    PREFILL,
    DECODE;

    /** {@code prefill} or {@code decode}, as in {@code handoff serve --role} and in the published records. */
    public String label()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Optional<MemberRole> parse(String label)
    {
        for (MemberRole role : values()) {
            if (role.label().equals(label)) {
                return Optional.of(role);
            }
        }
        return Optional.empty();
    }
}
