//! Which core's stack a received frame is for. Every stack has the guest's one address and
//! MAC; stack `k` listens on TCP port `PORT + k`, so the driver reads the destination port
//! (the paper's demultiplexing by flow, reduced to what one server port per core needs):
//! - IPv4 TCP to port `PORT + k`, `k` below the stack count: stack `k`;
//! - ARP: every stack (each keeps its own neighbour cache and must learn the gateway's
//!   address; each answers a request, and the duplicate replies are harmless);
//! - anything else (ICMP, other ports, fragments after the first, IPv6, runts): stack 0,
//!   which answers as a lone stack would (a reset for a closed port, nothing for the rest).

/// Where a frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// To one stack.
    Stack(usize),
    /// To every stack.
    All,
}

const ETH_HEADER: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const IP_PROTO_TCP: u8 = 6;

/// The destination of the Ethernet frame `frame` (without the virtio header) among `stacks`
/// stacks listening on `base_port`, `base_port + 1`, ...
pub fn classify(frame: &[u8], base_port: u16, stacks: usize) -> Dest {
    if frame.len() < ETH_HEADER {
        return Dest::Stack(0);
    }
    match u16::from_be_bytes([frame[12], frame[13]]) {
        ETHERTYPE_ARP => Dest::All,
        ETHERTYPE_IPV4 => Dest::Stack(tcp_stack(&frame[ETH_HEADER..], base_port, stacks)),
        _ => Dest::Stack(0),
    }
}

/// The stack of the IPv4 packet `ip`: by TCP destination port, else 0.
fn tcp_stack(ip: &[u8], base_port: u16, stacks: usize) -> usize {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != IP_PROTO_TCP {
        return 0;
    }
    let header = usize::from(ip[0] & 0xF) * 4;
    // Only the first fragment carries the TCP header.
    let fragment_offset = u16::from_be_bytes([ip[6], ip[7]]) & 0x1FFF;
    if header < 20 || fragment_offset != 0 || ip.len() < header + 4 {
        return 0;
    }
    let port = u16::from_be_bytes([ip[header + 2], ip[header + 3]]);
    match port.checked_sub(base_port) {
        Some(k) if usize::from(k) < stacks => usize::from(k),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet frame with an IPv4 header of `ihl` words, protocol `proto`, fragment
    /// offset `frag`, and a TCP header to port `port`.
    fn ipv4(proto: u8, ihl: u8, frag: u16, port: u16) -> std::vec::Vec<u8> {
        let mut f = std::vec![0u8; ETH_HEADER + usize::from(ihl) * 4 + 20];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let ip = &mut f[ETH_HEADER..];
        ip[0] = 0x40 | ihl;
        ip[6..8].copy_from_slice(&frag.to_be_bytes());
        ip[9] = proto;
        let tcp = usize::from(ihl) * 4;
        ip[tcp..tcp + 2].copy_from_slice(&40000u16.to_be_bytes());
        ip[tcp + 2..tcp + 4].copy_from_slice(&port.to_be_bytes());
        f
    }

    extern crate std;

    /// Asserts that each `(frame, stacks, stack)` goes to stack `stack` of `stacks` stacks
    /// listening from port 6379.
    fn goes_to(cases: &[(&[u8], usize, usize)]) {
        for (i, &(frame, stacks, stack)) in cases.iter().enumerate() {
            assert_eq!(
                classify(frame, 6379, stacks),
                Dest::Stack(stack),
                "case {i}"
            );
        }
    }

    #[test]
    fn tcp_goes_to_the_stack_of_its_port() {
        goes_to(&[
            (&ipv4(6, 5, 0, 6379), 2, 0),
            (&ipv4(6, 5, 0, 6380), 2, 1),
            (&ipv4(6, 5, 0, 6386), 8, 7),
            // IP options move the TCP header.
            (&ipv4(6, 7, 0, 6380), 2, 1),
            // Don't-fragment and more-fragments flags are not an offset.
            (&ipv4(6, 5, 0x6000, 6380), 2, 1),
        ]);
    }

    #[test]
    fn everything_else_goes_to_stack_0_and_arp_to_all() {
        let mut short = ipv4(6, 15, 0, 6380);
        short.truncate(ETH_HEADER + 60);
        let mut v6 = ipv4(6, 5, 0, 6380);
        v6[12..14].copy_from_slice(&0x86DDu16.to_be_bytes());
        goes_to(&[
            // A port beyond the stacks, below the base, UDP, a later fragment.
            (&ipv4(6, 5, 0, 6381), 2, 0),
            (&ipv4(6, 5, 0, 22), 2, 0),
            (&ipv4(17, 5, 0, 6380), 2, 0),
            (&ipv4(6, 5, 0x0010, 6380), 2, 0),
            // A bad header length, a truncated packet, a runt, IPv6.
            (&ipv4(6, 4, 0, 6380), 2, 0),
            (&short, 2, 0),
            (&[0; 10], 2, 0),
            (&v6, 2, 0),
        ]);
        let mut arp = std::vec![0u8; 42];
        arp[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        assert_eq!(classify(&arp, 6379, 2), Dest::All);
    }
}
