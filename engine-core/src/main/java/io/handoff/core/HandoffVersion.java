package io.handoff.core;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** Handoff's own version, as built. Third-party plugins' {@code Plugin-Requires} is checked against it. */
public final class HandoffVersion
{
    private static final String VERSION = load();

    private HandoffVersion() {}

    public static String get()
    {
        return VERSION;
    }

    private static String load()
    {
        try (InputStream in = HandoffVersion.class.getResourceAsStream("version.properties")) {
            if (in == null) {
                throw new IllegalStateException("version.properties missing from handoff.core: the build is broken");
            }
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("version");
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
