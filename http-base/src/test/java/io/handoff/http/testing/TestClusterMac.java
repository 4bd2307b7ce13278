package io.handoff.http.testing;

import io.handoff.http.base.security.ClusterMac;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;

/** HMAC-SHA256 keyed with a test's string, standing in for the core's cluster secret. */
public final class TestClusterMac
{
    private TestClusterMac() {}

    public static ClusterMac hmac(String key)
    {
        return message -> {
            try {
                Mac mac = Mac.getInstance("HmacSHA256");
                mac.init(new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
                return mac.doFinal(message);
            }
            catch (GeneralSecurityException e) {
                throw new AssertionError(e);
            }
        };
    }
}
