package io.handoff.core.security;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Collects the formatted messages of every warning (or worse) logged while it is open. */
public final class LogWarnings
        implements AutoCloseable
{
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final AbstractAppender appender = new AbstractAppender("warnings", null, null, true, Property.EMPTY_ARRAY)
    {
        @Override
        public void append(LogEvent event)
        {
            if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
                lines.add(event.getMessage().getFormattedMessage());
            }
        }
    };

    public LogWarnings()
    {
        appender.start();
        ((LoggerContext) LogManager.getContext(false)).getRootLogger().addAppender(appender);
    }

    public List<String> lines()
    {
        return lines;
    }

    @Override
    public void close()
    {
        ((LoggerContext) LogManager.getContext(false)).getRootLogger().removeAppender(appender);
    }
}
