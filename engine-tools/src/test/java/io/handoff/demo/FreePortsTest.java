package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FreePortsTest
{
    @Test
    void givesDistinctPortsThatCanBeBoundOnLoopback()
            throws IOException
    {
        List<Integer> ports = FreePorts.allocate(5);
        assertThat(ports).hasSize(5).doesNotHaveDuplicates().allSatisfy(port -> assertThat(port).isBetween(1, 65535));
        for (int port : ports) {
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                assertThat(socket.getLocalPort()).isEqualTo(port);
            }
        }
    }

    @Test
    void refusesToAllocateNothing()
    {
        assertThatThrownBy(() -> FreePorts.allocate(0)).hasMessageContaining("at least 1");
    }
}
