/**
 * Handoff's service-provider interface: what a plugin implements and what it may rely on. These
 * packages are the only part of the engine a plugin may depend on, with scope {@code provided}.
 */
package io.handoff.spi;
