package io.handoff.spi;

/** What a provider plugs into. The lower-case name is what reports and configuration use. */
public enum ProviderKind
{
    TRANSFER,
    ATTENTION;

    public String label()
    {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
