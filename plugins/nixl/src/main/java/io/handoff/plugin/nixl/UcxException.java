package io.handoff.plugin.nixl;

/** A UCX call returned an error status; the message names the call and carries UCX's own words. */
final class UcxException
        extends RuntimeException
{
    private final int status;

    UcxException(String call, int status, String text)
    {
        super(call + " failed: " + text + " (UCX status " + status + ")");
        this.status = status;
    }

    int status()
    {
        return status;
    }
}
