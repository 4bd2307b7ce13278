package io.handoff.plugin.nixl;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The system's {@code libucp}, reached through Java's FFM API and loaded lazily, once. Its absence is
 * a reported availability, not a crash.
 */
final class UcxLibrary
{
    /**
     * The oldest UCX the binding accepts: its struct layouts come from the 1.13 headers (Debian 12 ships 1.13.1), and
     * UCX keeps those structs compatible in later versions (new fields go at the end, behind field masks).
     */
    static final int MIN_MAJOR = 1;
    static final int MIN_MINOR = 13;

    record Version(int major, int minor, int release)
    {
        boolean atLeast(int wantMajor, int wantMinor)
        {
            return major > wantMajor || (major == wantMajor && minor >= wantMinor);
        }

        @Override
        public String toString()
        {
            return major + "." + minor + "." + release;
        }
    }

    private UcxLibrary() {}

    /**
     * Loads {@code library} and asks it for its version, or says why not. Loading libucs installs UCX's
     * signal handlers unless {@code UCX_ERROR_SIGNALS} is empty, and that handler kills the JVM on its
     * first implicit null check; so without that setting the library is not loaded at all.
     */
    static Probe probe(String library, String errorSignals)
    {
        if (errorSignals == null || !errorSignals.isEmpty()) {
            return Probe.failed("UCX_ERROR_SIGNALS is not set to empty, and loading UCX would install a signal handler "
                    + "that kills the JVM: start Handoff with bin/handoff, which sets it, or export UCX_ERROR_SIGNALS=");
        }
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        }
        catch (IllegalArgumentException e) {
            return Probe.failed(library + " not found: install UCX (Debian/Ubuntu: apt-get install libucx0)");
        }
        Optional<MemorySegment> getVersion = lookup.find("ucp_get_version");
        if (getVersion.isEmpty()) {
            return Probe.failed(library + " has no ucp_get_version: it is not a UCX ucp library");
        }
        MethodHandle handle = Linker.nativeLinker().downcallHandle(getVersion.get(),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment release = arena.allocate(ValueLayout.JAVA_INT);
            handle.invokeExact(major, minor, release);
            Version version = new Version(major.get(ValueLayout.JAVA_INT, 0), minor.get(ValueLayout.JAVA_INT, 0),
                    release.get(ValueLayout.JAVA_INT, 0));
            if (!version.atLeast(MIN_MAJOR, MIN_MINOR)) {
                return Probe.failed("UCX " + version + " is too old: the nixl backend needs UCX " + MIN_MAJOR + "." + MIN_MINOR + " or newer");
            }
            return new Probe(Optional.of(version), null);
        }
        catch (Throwable e) {
            return Probe.failed("calling ucp_get_version in " + library + " failed: " + e);
        }
    }

    record Probe(Optional<Version> version, String failure)
    {
        static Probe failed(String reason)
        {
            return new Probe(Optional.empty(), reason);
        }
    }
}
