package io.handoff.spi.attention;

/** Element type of the KV pool. */
public enum KvDtype
{
    F32(4),
    BF16(2),
    F16(2);

    private final int bytes;

    KvDtype(int bytes)
    {
        this.bytes = bytes;
    }

    public int bytes()
    {
        return bytes;
    }
}
