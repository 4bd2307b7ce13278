package io.handoff.router;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The policies {@code handoff.router.policy.prefill} and {@code .decode} name. */
public enum RoutingPolicyName
{
    ROUND_ROBIN,
    LEAST_LOAD,
    CACHE_AWARE,
    POWER_OF_TWO;

    /** As the configuration spells it, e.g. {@code cache-aware}. */
    public String label()
    {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The policy {@code key} names; an error naming the key and the allowed values otherwise. */
    public static RoutingPolicyName parse(String key, String value)
    {
        for (RoutingPolicyName name : values()) {
            if (name.label().equals(value)) {
                return name;
            }
        }
        throw new IllegalArgumentException(key + " = '" + value + "' is not a routing policy; use one of "
                + Arrays.stream(values()).map(RoutingPolicyName::label).collect(Collectors.joining(", ")));
    }
}
