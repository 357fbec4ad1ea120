// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A seeded discrete-event simulator: two engines over a lossy, reordering multipath fabric.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <algorithm>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include "core/codec.h"
#include "core/conn.h"
#include "core/handshake.h"
}

#include "stream_pool.hpp"

namespace mrsim {

struct FabricConfig {
	uint32_t links = 8;
	double line_gbps = 100.0;
	uint64_t base_latency_ns = 4000;
	uint64_t latency_step_ns = 400;	// link i adds i * step
	double loss = 0.0;		// both directions
	double dup = 0.0;
	double reorder = 0.0;		// within a link
	uint64_t jitter_ns = 0;		// extra latency, uniform in [0, jitter), FIFO per link
	// A bottleneck on each link and direction: 0 = as fast as the senders; otherwise
	// packets queue at this rate in a drop-tail buffer of link_buffer_pkts full-size
	// packets, which marks nothing (the fabric that [MR-CC-4] must not overrun).
	double link_gbps = 0;
	uint32_t link_buffer_pkts = 0;
	int blackhole_link = -1;	// data direction only, unless blackhole_acks
	bool blackhole_acks = false;	// the black hole eats ACKs on the link too
	uint64_t blackhole_from_ns = 0;	// when the black hole opens (a link cut mid-transfer)
	uint64_t time_limit_ns = 2'000'000'000ULL;
};

struct Workload {
	uint32_t streams = 4;
	std::vector<uint32_t> sizes;	// message sizes, posted round-robin over streams
	bool rdma = false;		// every 5th message a Read, every 5th an atomic
	bool handshake = false;		// connect through CONNECT_REQ/RESP over the fabric
	bool stale_peer = false;	// B holds a connection from A's previous incarnation
};

struct Result {
	bool completed = false;
	bool quiescent = false;
	uint64_t finish_ns = 0;
	uint64_t bytes = 0;
	std::vector<std::string> errors;
	uint32_t retransmits = 0;
	uint32_t path_failures = 0;
	uint32_t path_rerolls = 0;
	uint32_t path_rebalances = 0;	// [MR-PATH-10] moves off a shared bottleneck
	std::vector<uint16_t> initial_entropy;
	std::vector<uint16_t> final_entropy;
	std::vector<uint32_t> failures_per_path;
	uint64_t packets = 0;
	uint64_t overflows = 0;		// packets the links' full buffers dropped
	uint32_t rx_duplicates = 0;
	uint32_t reads = 0;
	uint32_t atomics = 0;
	uint32_t tail_probes = 0;
	uint32_t stale_flushed = 0;	// WQEs of the stale connection completed with an error
	uint32_t challenges = 0;	// [MR-CONN-7] restart claims challenged before belief
	std::string diag;	// engine state when the run did not finish cleanly
	// Times an engine had nothing left to do at `now` (no packet, no ACK, timers run)
	// yet named a deadline not after `now`: a kernel timer armed for it fires at
	// once, again and again, and starves the CPU.  Must stay 0.
	uint32_t spins = 0;
	std::string spin_diag;	// the first one
	uint64_t max_completion_gap_ns = 0;	// the longest time with no message completed

	double goodput_gbps() const { return finish_ns ? bytes * 8.0 / finish_ns : 0; }
};

inline uint8_t pattern(uint32_t slot, uint32_t msn, uint32_t i)
{
	return static_cast<uint8_t>(slot * 31 + msn * 7 + i * 13 + (i >> 8));
}

// The responder's memory that Reads fetch.
inline uint8_t rpattern(uint64_t addr)
{
	return static_cast<uint8_t>((addr * 2654435761u) >> 13);
}

inline uint32_t link_of(uint16_t entropy, uint32_t links)
{
	return ((entropy * 2654435761u) >> 16) % links;
}

// The source port of packets that name none ([MR-ACK-8] ACKs of a path nothing came on).
constexpr uint16_t kCtrlSport = 49152;

// An ACK's link: the fabric hashes the reverse direction's 5-tuple independently.
inline uint32_t ack_link_of(uint16_t sport, uint32_t links)
{
	return link_of(static_cast<uint16_t>((sport ? sport : kCtrlSport) ^ 0xa5a5), links);
}

class Sim {
public:
	Sim(const FabricConfig &fc, const Workload &wl, uint64_t seed)
		: fc_(fc), wl_(wl), rng_(seed)
	{
		mr_conn_cfg ca, cb;
		mr_conn_cfg_defaults(&ca);
		ca.local_conn_id = 0x1111;
		ca.peer_conn_id = 0x2222;
		ca.tx_initial_psn = static_cast<u32>(rng_());
		ca.rx_initial_psn = static_cast<u32>(rng_());
		ca.seed = rng_();
		full_pkt_ = MR_MAX_HDR_LEN + ca.pmtu + 64;
		cb = ca;
		cb.local_conn_id = ca.peer_conn_id;
		cb.peer_conn_id = ca.local_conn_id;
		cb.tx_initial_psn = ca.rx_initial_psn;
		cb.rx_initial_psn = ca.tx_initial_psn;
		cb.seed = rng_();
		per_stream_.resize(wl_.streams);
		for (size_t i = 0; i < wl_.sizes.size(); i++)
			per_stream_[i % wl_.streams].push_back(wl_.sizes[i]);
		next_post_.assign(wl_.streams, 0);
		next_send_done_.assign(wl_.streams, 0);
		next_recv_done_.assign(wl_.streams, 0);
		rsn_done_.assign(wl_.streams, 0);
		counter_.assign(wl_.streams, 0);
		expect_counter_.assign(wl_.streams, 0);
		link_last_.assign(2 * fc_.links, 0);
		link_busy_.assign(2 * fc_.links, 0);
		ops_.check_place = nullptr;
		ops_.execute = &Sim::execute_cb;
		if (wl_.handshake) {
			mr_hs_local_defaults(&la_, rng_() | 1);
			mr_hs_local_defaults(&lb_, rng_() | 1);
			if (wl_.stale_peer)
				make_stale_peer(cb);
			mr_hs_connect(&ha_, &la_, 0, static_cast<u32>(rng_()) | 1,
				      static_cast<u32>(rng_()));
			return;
		}
		a_ = std::make_unique<mr_conn>();
		b_ = std::make_unique<mr_conn>();
		mr_conn_init(a_.get(), &ca);
		mr_conn_init(b_.get(), &cb);
		open_streams();
	}

	Result run()
	{
		uint64_t now = 0;
		post_all();
		while (now < fc_.time_limit_ns) {
			handshake(now);
			if (a_)
				mr_conn_on_timer(a_.get(), now);
			if (b_)
				mr_conn_on_timer(b_.get(), now);
			bool sent_a = transmit(now);
			bool sent_b = transmit_b(now);
			bool sent = sent_a || sent_b;
			acks(now);
			check_spin(a_.get(), sent_a, now, "A");
			check_spin(b_.get(), sent_b, now, "B");
			if (all_done()) {
				if (!res_.completed) {
					res_.completed = true;
					res_.finish_ns = now;
				}
				if (mr_conn_quiescent(a_.get()) && mr_conn_quiescent(b_.get()) &&
				    q_.empty() && !ha_.pending && !hb_.pending) {
					res_.quiescent = true;
					break;
				}
			}
			uint64_t t = fc_.time_limit_ns;
			if (!q_.empty())
				t = std::min(t, q_.top().t);
			if (a_)
				t = std::min(t, mr_conn_next_deadline(a_.get()));
			if (b_)
				t = std::min(t, mr_conn_next_deadline(b_.get()));
			if (wl_.handshake) {
				t = std::min(t, mr_hs_next_deadline(&ha_));
				t = std::min(t, mr_hs_next_deadline(&hb_));
			}
			if (sent)
				t = std::min(t, std::max(tx_free_, tx_free_b_));
			if (t <= now)
				t = now + 100;
			now = t;
			while (!q_.empty() && q_.top().t <= now) {
				Flight f = q_.top();
				q_.pop();
				deliver(f, now);
			}
		}
		finish();
		return res_;
	}

	mr_conn *a() { return a_.get(); }
	const mr_hs &hs_a() const { return ha_; }
	const mr_hs &hs_b() const { return hb_; }

private:
	struct Flight {
		uint64_t t;
		uint64_t seq;
		bool to_b;
		std::vector<uint8_t> bytes;
		uint16_t sport;		// the UDP source port it was sent with
		bool operator<(const Flight &o) const
		{
			return t != o.t ? t > o.t : seq > o.seq;
		}
	};

	// Called when transmit and acks are done at `now`: an engine that sent nothing
	// must not ask to be woken at or before `now`.
	void check_spin(mr_conn *c, bool sent, uint64_t now, const char *who)
	{
		if (!c || sent || mr_conn_next_deadline(c) > now)
			return;
		if (!res_.spins++)
			res_.spin_diag = std::string(who) + " at " + std::to_string(now) +
					 " ns: deadline " +
					 std::to_string(mr_conn_next_deadline(c)) +
					 ", sender deadline " +
					 std::to_string(mr_conn_sender_deadline(c)) +
					 ", next_send " + std::to_string(c->next_send_ns);
	}

	bool blackholed(uint32_t link, uint64_t now) const
	{
		return static_cast<int>(link) == fc_.blackhole_link && now >= fc_.blackhole_from_ns;
	}

	void completed(uint64_t bytes, uint64_t now)
	{
		res_.bytes += bytes;
		res_.max_completion_gap_ns = std::max(res_.max_completion_gap_ns, now - last_done_ns_);
		last_done_ns_ = now;
	}

	void error(const std::string &e)
	{
		if (res_.errors.size() < 20)
			res_.errors.push_back(e);
	}

	void open_streams()
	{
		for (uint32_t s = 0; s < wl_.streams; s++) {
			if (a_)
				pool_.open(a_.get(), 100 + s, 200 + s);
			if (b_)
				pool_.open(b_.get(), 200 + s, 100 + s);
		}
		if (b_) {
			b_->ops = &ops_;
			b_->ops_ctx = this;
		}
		if (a_ && res_.initial_entropy.empty())
			for (uint32_t p = 0; p < a_->cfg.n_paths; p++)
				res_.initial_entropy.push_back(a_->tx_path[p].entropy);
	}

	// B's connection with A's previous incarnation, with a WQE of its own in flight.
	void make_stale_peer(mr_conn_cfg cb)
	{
		mr_hs_local old_a;
		mr_hs_local_defaults(&old_a, la_.incarnation ^ 0x5a5a);
		mr_hs a_old;
		mr_pkt req;
		mr_hs_connect(&a_old, &old_a, 0, 0x4242, 7);
		mr_hs_next_packet(&a_old, 0, &req);
		mr_hs_accept(&hb_, &lb_, &req, 0x4343, 9);
		mr_hs_next_packet(&hb_, 0, &req);	// its CONNECT_RESP went out long ago
		mr_hs_conn_cfg(&hb_, &cb);
		stale_ = std::make_unique<mr_conn>();
		mr_conn_init(stale_.get(), &cb);
		pool_.open(stale_.get(), 200, 100);
		mr_conn_post(stale_.get(), 0, MR_OP_SEND, 1000, 0, 0, 1);
	}

	static u8 execute_cb(void *ctx, mr_exec *ex)
	{
		return static_cast<Sim *>(ctx)->execute(ex);
	}

	// [MR-REL-12] the responder's memory: atomics must run exactly once, in MSN order.
	u8 execute(mr_exec *ex)
	{
		uint32_t s = ex->stream_slot;
		if (ex->opcode == MR_OP_READ_REQ)
			return 0;
		if (!executed_.insert({ s, ex->msn }).second)
			error("atomic executed twice: stream " + std::to_string(s) + " msn " +
			      std::to_string(ex->msn));
		ex->orig = counter_[s];
		if (ex->opcode == MR_OP_ATOMIC_FADD)
			counter_[s] += ex->swap_add;
		else if (counter_[s] == ex->compare)
			counter_[s] = ex->swap_add;
		return 0;
	}

	uint8_t op_of(uint32_t msn) const
	{
		if (wl_.rdma && msn % 5 == 3)
			return MR_OP_READ_REQ;
		if (wl_.rdma && msn % 5 == 4)
			return msn % 10 == 4 ? MR_OP_ATOMIC_FADD : MR_OP_ATOMIC_CAS;
		return (msn % 3 == 2) ? MR_OP_WRITE : MR_OP_SEND;
	}

	// [MR-WIRE-9] [MR-VERBS-12] every other Write carries immediate data; Sends carry
	// immediate data or an rkey to invalidate in turn, some solicited.
	static uint8_t wr_flags_of(uint8_t op, uint32_t msn)
	{
		uint8_t f = 0;
		if (op == MR_OP_WRITE && msn % 2 == 0)
			f = MR_WR_IMM;
		else if (op == MR_OP_SEND && msn % 4 == 1)
			f = MR_WR_IMM;
		else if (op == MR_OP_SEND && msn % 4 == 3)
			f = MR_WR_INV;
		if (f && msn % 8 < 4 && op == MR_OP_SEND)
			f |= MR_WR_SOLICITED;
		return f;
	}

	static uint32_t imm_of(uint32_t s, uint32_t msn)
	{
		return (s << 24) ^ (msn * 2654435761u);
	}

	// Sends and Writes with immediate consume receive WQEs.
	bool consumes(uint32_t msn) const
	{
		uint8_t op = op_of(msn);
		return op == MR_OP_SEND || (op == MR_OP_WRITE && (wr_flags_of(op, msn) & MR_WR_IMM));
	}

	static uint64_t va_of(uint32_t s, uint32_t msn)
	{
		return 0x10000000ULL * (s + 1) + msn * 0x100000ULL;
	}

	void post_all()
	{
		if (!a_)
			return;
		for (uint32_t s = 0; s < wl_.streams; s++) {
			while (next_post_[s] < per_stream_[s].size()) {
				uint32_t msn = next_post_[s];
				mr_wr wr{};
				wr.opcode = op_of(msn);
				wr.len = per_stream_[s][msn];
				wr.va = va_of(s, msn);
				wr.rkey = 0x77 + s;
				wr.cookie = (uint64_t(s) << 32) | msn;
				wr.flags = wr_flags_of(wr.opcode, msn);
				wr.imm = imm_of(s, msn);
				wr.inv_rkey = ~imm_of(s, msn);
				uint64_t before = expect_counter_[s];
				if (wr.opcode == MR_OP_ATOMIC_FADD) {
					wr.swap_add = msn + 1;
					expect_counter_[s] += msn + 1;
				} else if (wr.opcode == MR_OP_ATOMIC_CAS) {
					wr.compare = before;
					wr.swap_add = before * 3 + msn;
					expect_counter_[s] = wr.swap_add;
				}
				if (mr_conn_post_wr(a_.get(), s, &wr)) {
					expect_counter_[s] = before;
					break;
				}
				expect_orig_[{ s, msn }] = before;
				next_post_[s]++;
			}
		}
	}

	void handshake(uint64_t now)
	{
		if (!wl_.handshake)
			return;
		if (mr_hs_on_timer(&ha_, now) == MR_HS_EV_FAILED)
			error("the handshake failed");
		mr_pkt p;
		while (mr_hs_next_packet(&ha_, now, &p))
			send_pkt(p, true, now);
		while (mr_hs_next_packet(&hb_, now, &p))
			send_pkt(p, false, now);
	}

	void send_pkt(const mr_pkt &p, bool to_b, uint64_t now)
	{
		std::vector<uint8_t> bytes(MR_MAX_HDR_LEN);
		bytes.resize(mr_pkt_build(&p, bytes.data(), MR_MAX_HDR_LEN));
		if (p.bth.opcode == MR_OP_ACK) {
			uint32_t link = ack_link_of(p.sport, fc_.links);
			if (fc_.blackhole_acks && blackholed(link, now))
				return;
			send(std::move(bytes), to_b, link, now, p.sport ? p.sport : kCtrlSport);
			return;
		}
		send(std::move(bytes), to_b, p.bth.path_id % fc_.links, now);
	}

	// The endpoints' connection tables: one peer each, keyed by the demultiplexing id.
	bool deliver_handshake(const mr_pkt &pkt, bool to_b, uint64_t now)
	{
		uint8_t op = pkt.bth.opcode;
		if (op != MR_OP_CONNECT_REQ && op != MR_OP_CONNECT_RESP && op != MR_OP_CLOSE &&
		    op != MR_OP_CLOSE_ACK)
			return false;
		if (!to_b) {
			if (pkt.bth.conn_id == ha_.local_conn_id &&
			    mr_hs_on_packet(&ha_, now, &pkt) == MR_HS_EV_ESTABLISHED) {
				mr_conn_cfg cfg;
				mr_conn_cfg_defaults(&cfg);
				cfg.seed = 11;
				mr_hs_conn_cfg(&ha_, &cfg);
				a_ = std::make_unique<mr_conn>();
				mr_conn_init(a_.get(), &cfg);
				open_streams();
				post_all();
			}
			return true;
		}
		if (op != MR_OP_CONNECT_REQ)
			return true;
		// The rules the kernel's connection table runs (mr_hs_on_connect_req); the old
		// connection of a restarted peer hears nothing from it (last_rx_ns 0).
		switch (mr_hs_on_connect_req(&hb_, now, 0, &pkt)) {
		case MR_HS_ACT_NONE:
			return true;
		case MR_HS_ACT_CHALLENGE:
			if (stale_)
				mr_conn_challenge(stale_.get());
			res_.challenges++;
			return true;
		case MR_HS_ACT_WAIT:
			return true;
		case MR_HS_ACT_REPLACE:
			fail_stale();
			hb_ = mr_hs{};
			break;
		case MR_HS_ACT_ACCEPT:
			break;
		default:
			error("unexpected action on a CONNECT_REQ");
			return true;
		}
		if (mr_hs_accept(&hb_, &lb_, &pkt, static_cast<u32>(rng_()) | 1,
				 static_cast<u32>(rng_())) != MR_HS_EV_ESTABLISHED) {
			error("the responder rejected the request");
			return true;
		}
		mr_conn_cfg cfg;
		mr_conn_cfg_defaults(&cfg);
		cfg.seed = 12;
		mr_hs_conn_cfg(&hb_, &cfg);
		b_ = std::make_unique<mr_conn>();
		mr_conn_init(b_.get(), &cfg);
		open_streams();
		return true;
	}

	// [MR-CONN-7] the old connection is torn down and its WQEs fail.
	void fail_stale()
	{
		if (!stale_) {
			error("restart detected without a stale connection");
			return;
		}
		mr_conn_fail(stale_.get(), MR_WC_RETRY_EXC_ERR);
		mr_completion c;
		while (mr_conn_poll_completion(stale_.get(), &c))
			if (c.kind == MR_COMPL_SEND && c.status != MR_WC_SUCCESS)
				res_.stale_flushed++;
		stale_.reset();
	}

	bool transmit(uint64_t now)
	{
		if (tx_free_ > now)
			return true;
		mr_tx_desc d;
		if (!a_ || !mr_conn_next_packet(a_.get(), now, &d))
			return false;
		std::vector<uint8_t> payload(d.pkt.bth.payload_len);
		for (uint32_t i = 0; i < payload.size(); i++)
			payload[i] = pattern(d.stream_slot, d.pkt.bth.msn, d.pkt.bth.offset + i);
		d.pkt.payload = payload.data();
		std::vector<uint8_t> bytes(MR_MAX_HDR_LEN + payload.size());
		uint32_t len = mr_pkt_build(&d.pkt, bytes.data(), static_cast<u32>(bytes.size()));
		bytes.resize(len);
		tx_free_ = now + static_cast<uint64_t>((len + 64) * 8 / fc_.line_gbps);
		res_.packets++;
		uint32_t link = link_of(d.entropy, fc_.links);
		if (blackholed(link, now))
			return true;
		send(std::move(bytes), true, link, now, d.entropy);
		return true;
	}

	// B sends READ_RESP and ATOMIC_RESP packets; their bytes come from B's memory.
	bool transmit_b(uint64_t now)
	{
		if (tx_free_b_ > now)
			return true;
		mr_tx_desc d;
		if (!b_ || !mr_conn_next_packet(b_.get(), now, &d))
			return false;
		std::vector<uint8_t> payload(d.pkt.bth.payload_len);
		for (uint32_t i = 0; i < payload.size(); i++)
			payload[i] = rpattern(d.va + d.pkt.bth.offset + i);
		d.pkt.payload = payload.data();
		std::vector<uint8_t> bytes(MR_MAX_HDR_LEN + payload.size());
		uint32_t len = mr_pkt_build(&d.pkt, bytes.data(), static_cast<u32>(bytes.size()));
		bytes.resize(len);
		tx_free_b_ = now + static_cast<uint64_t>((len + 64) * 8 / fc_.line_gbps);
		send(std::move(bytes), false, link_of(d.entropy, fc_.links), now, d.entropy);
		return true;
	}

	void send(std::vector<uint8_t> bytes, bool to_b, uint32_t link, uint64_t now,
		  uint16_t sport = 0)
	{
		uint64_t lat = fc_.base_latency_ns + link * fc_.latency_step_ns;
		if (fc_.link_gbps > 0) {
			uint64_t &busy = link_busy_[link * 2 + (to_b ? 0 : 1)];
			uint64_t start = std::max(now, busy);
			uint64_t full = static_cast<uint64_t>(full_pkt_ * 8 / fc_.link_gbps);

			if (start - now > fc_.link_buffer_pkts * full) {
				res_.overflows++;
				return;
			}
			busy = start + static_cast<uint64_t>((bytes.size() + 64) * 8 / fc_.link_gbps);
			lat += busy - now;
		}
		if (chance(fc_.loss))
			return;
		if (fc_.jitter_ns)
			lat += rng_() % fc_.jitter_ns;
		uint64_t &last = link_last_[link * 2 + (to_b ? 0 : 1)];
		uint64_t t = std::max(now + lat, last);
		if (chance(fc_.reorder) && t > lat / 2 + now)
			t = now + lat / 2;	// overtakes packets ahead of it on the link
		else
			last = t;
		if (chance(fc_.dup))
			q_.push({ t + 50, seq_++, to_b, bytes, sport });
		q_.push({ t, seq_++, to_b, std::move(bytes), sport });
	}

	void deliver(const Flight &f, uint64_t now)
	{
		mr_pkt pkt;
		if (mr_pkt_parse(f.bytes.data(), static_cast<u32>(f.bytes.size()), &pkt) !=
		    MR_PARSE_OK) {
			error("parser rejected a packet the engine built");
			return;
		}
		pkt.sport = f.sport;
		if (deliver_handshake(pkt, f.to_b, now))
			return;
		if (!f.to_b) {
			mr_place pl;
			if (a_ && mr_conn_receive(a_.get(), now, &pkt, false, &pl) ==
					  MR_RX_RESULT_PLACE)
				place_response(pl);
			poll(now);
			return;
		}
		mr_place pl;
		if (b_ && mr_conn_receive(b_.get(), now, &pkt, false, &pl) == MR_RX_RESULT_PLACE)
			place(pl);
		poll(now);
	}

	// Read data and atomic results land in A's buffers, once each.
	void place_response(const mr_place &pl)
	{
		uint32_t s = static_cast<uint32_t>(pl.cookie >> 32), msn = static_cast<uint32_t>(pl.cookie);
		if (s != pl.stream_slot || msn != pl.msn || msn >= per_stream_[s].size()) {
			error("response for an unknown WQE");
			return;
		}
		if (!placed_.insert(std::make_tuple(s + 1000, pl.msn, pl.offset)).second)
			error("response placed twice");
		if (pl.opcode == MR_OP_ATOMIC_RESP) {
			if (pl.orig != expect_orig_[{ s, msn }])
				error("atomic result wrong at msn " + std::to_string(msn));
			return;
		}
		if (static_cast<uint64_t>(pl.offset) + pl.len > per_stream_[s][msn]) {
			error("read response past the end");
			return;
		}
		for (uint32_t i = 0; i < pl.len; i++)
			if (pl.data[i] != rpattern(va_of(s, msn) + pl.offset + i)) {
				error("read data wrong at msn " + std::to_string(msn));
				break;
			}
		read_bytes_[{ s, msn }] += pl.len;
	}

	void place(const mr_place &pl)
	{
		uint32_t s = pl.stream_slot;
		if (s >= wl_.streams || pl.msn >= per_stream_[s].size()) {
			error("placement for an unknown message");
			return;
		}
		auto key = std::make_tuple(s, pl.msn, pl.offset);
		if (!placed_.insert(key).second)
			error("packet placed twice: stream " + std::to_string(s) + " msn " +
			      std::to_string(pl.msn) + " offset " + std::to_string(pl.offset));
		if (pl.msn < next_recv_done_[s])
			error("placement after completion (at-most-once violated)");
		uint32_t len = per_stream_[s][pl.msn];
		if (static_cast<uint64_t>(pl.offset) + pl.len > len) {
			error("placement past the message end");
			return;
		}
		if (pl.opcode == MR_OP_WRITE &&
		    pl.va != 0x10000000ULL * (s + 1) + pl.msn * 0x100000ULL)
			error("write target address wrong");
		auto &buf = rxbuf_[{ s, pl.msn }];
		buf.resize(len);
		for (uint32_t i = 0; i < pl.len; i++)
			buf[pl.offset + i] = pl.data[i];
	}

	void poll(uint64_t now)
	{
		mr_completion c;
		while (b_ && mr_conn_poll_completion(b_.get(), &c)) {
			uint32_t s = c.stream_slot;
			if (c.kind != MR_COMPL_RECV || s >= wl_.streams ||
			    c.status != MR_WC_SUCCESS) {
				error("unexpected completion at the receiver");
				continue;
			}
			while (next_recv_done_[s] < c.msn && !consumes(next_recv_done_[s]))
				next_recv_done_[s]++;
			if (c.msn != next_recv_done_[s])
				error("receive completion out of MSN order");
			next_recv_done_[s] = c.msn + 1;
			if (!consumes(c.msn) || c.opcode != op_of(c.msn))
				error("receive completion for a message that consumes no receive WQE");
			if (c.rsn != rsn_done_[s]++)
				error("receive completion with a wrong rsn");
			uint8_t f = wr_flags_of(op_of(c.msn), c.msn);
			uint16_t cf = ((f & MR_WR_IMM) ? MR_COMPL_F_IMM : 0) |
				      ((f & MR_WR_INV) ? MR_COMPL_F_INV : 0) |
				      ((f & MR_WR_SOLICITED) ? MR_COMPL_F_SOLICITED : 0);
			if (c.flags != cf || ((f & MR_WR_IMM) && c.imm != imm_of(s, c.msn)) ||
			    ((f & MR_WR_INV) && c.inv_rkey != ~imm_of(s, c.msn)))
				error("receive completion with wrong immediate data or invalidate");
			if (c.msn >= per_stream_[s].size() || c.len != per_stream_[s][c.msn]) {
				error("receive completion with a wrong length");
				continue;
			}
			auto &buf = rxbuf_[{ s, c.msn }];
			buf.resize(c.len);
			for (uint32_t i = 0; i < c.len; i++)
				if (buf[i] != pattern(s, c.msn, i)) {
					error("wrong bytes at offset " + std::to_string(i));
					break;
				}
			completed(c.len, now);
			rxbuf_.erase({ s, c.msn });
		}
		while (a_ && mr_conn_poll_completion(a_.get(), &c)) {
			uint32_t s = c.stream_slot;
			if (c.kind != MR_COMPL_SEND || s >= wl_.streams) {
				error("unexpected completion at the sender");
				continue;
			}
			if (c.msn != next_send_done_[s])
				error("send completion out of MSN order");
			if (c.cookie != ((uint64_t(s) << 32) | c.msn))
				error("send completion cookie wrong");
			if (c.status != MR_WC_SUCCESS)
				error("error completion at the sender");
			if (c.opcode == MR_OP_READ_REQ) {
				res_.reads++;
				if (read_bytes_[{ s, c.msn }] != per_stream_[s][c.msn])
					error("read completed before all its bytes were placed");
			} else if (c.opcode != MR_OP_SEND && c.opcode != MR_OP_WRITE) {
				res_.atomics++;
				if (c.orig != expect_orig_[{ s, c.msn }])
					error("atomic completion with a wrong result");
			}
			if (c.opcode == MR_OP_WRITE && !consumes(c.msn) &&
			    c.status == MR_WC_SUCCESS) {
				// [MR-VERBS-3] acknowledged: every byte is at B
				auto &buf = rxbuf_[{ s, c.msn }];
				buf.resize(per_stream_[s][c.msn]);
				for (uint32_t i = 0; i < buf.size(); i++)
					if (buf[i] != pattern(s, c.msn, i)) {
						error("wrong write bytes at offset " + std::to_string(i));
						break;
					}
				completed(buf.size(), now);
				rxbuf_.erase({ s, c.msn });
			}
			next_send_done_[s] = c.msn + 1;
			if (next_recv_done_[s] < c.msn + 1 && !consumes(c.msn))
				next_recv_done_[s] = c.msn + 1;	// these complete nothing at B
		}
		post_all();
	}

	void acks(uint64_t now)
	{
		mr_pkt ack;
		while (b_ && mr_conn_next_ack(b_.get(), now, &ack))
			send_pkt(ack, false, now);
		while (a_ && mr_conn_next_ack(a_.get(), now, &ack))
			send_pkt(ack, true, now);
	}

	bool all_done() const
	{
		for (uint32_t s = 0; s < wl_.streams; s++)
			if (next_send_done_[s] < per_stream_[s].size() ||
			    next_recv_done_[s] < per_stream_[s].size())
				return false;
		return true;
	}

	void diagnose()
	{
		std::string d;
		for (uint32_t s = 0; s < wl_.streams; s++) {
			const mr_tx_stream &ts = *a_->tx[s];
			const mr_rx_stream &rs = *b_->rx[s];
			d += "stream " + std::to_string(s) + ": msgs " +
			     std::to_string(per_stream_[s].size()) + " posted " +
			     std::to_string(next_post_[s]) + " send_done " +
			     std::to_string(next_send_done_[s]) + " recv_done " +
			     std::to_string(next_recv_done_[s]) + " | tx next " +
			     std::to_string(ts.next_msn) + " acked " + std::to_string(ts.msn_acked) +
			     " polled " + std::to_string(ts.msn_polled) + " | rx cum " +
			     std::to_string(rs.msn_cum) + " reported " +
			     std::to_string(rs.msn_reported) + "\n";
			for (uint32_t m = ts.msn_acked; m != ts.next_msn; m++) {
				const mr_tx_msg &x = ts.msg[m % MR_STREAM_MAX_MSGS];
				d += "  tx msn " + std::to_string(x.msn) + " st " +
				     std::to_string(x.state) + " npkts " + std::to_string(x.npkts) +
				     " next_new " + std::to_string(x.next_new) + " base " +
				     std::to_string(x.base) + " acked " +
				     std::to_string(x.acked_count) + " lost0 " +
				     std::to_string(x.lost[0]) + "\n";
			}
			for (uint32_t i = 0; i < MR_STREAM_MAX_MSGS; i++) {
				const mr_rx_msg &x = rs.msg[i];
				if (x.state != MR_MSG_FREE)
					d += "  rx msn " + std::to_string(x.msn) + " st " +
					     std::to_string(x.state) + " npkts " +
					     std::to_string(x.npkts) + " recv " +
					     std::to_string(x.received) + " base " +
					     std::to_string(x.base) + "\n";
			}
		}
		for (uint32_t p = 0; p < a_->cfg.n_paths; p++) {
			const mr_path_tx &t = a_->tx_path[p];
			d += "path " + std::to_string(p) + " state " + std::to_string(t.state) +
			     " out " + std::to_string(t.outstanding) + " una " +
			     std::to_string(t.una) + " next " + std::to_string(t.next_psn) +
			     " cwnd " + std::to_string(t.cc.cwnd_q10 / 1024) + " rxcum " +
			     std::to_string(b_->rx_path[p].cum_psn) + "\n";
		}
		res_.diag = d;
	}

	void finish()
	{
		if (!a_ || !b_)
			return;
		if (!res_.completed || !res_.quiescent)
			diagnose();
		res_.tail_probes = a_->tail_probes;
		res_.retransmits = a_->retransmits;
		res_.rx_duplicates = b_->rx_duplicates;
		res_.path_rebalances = a_->path_rebalances;
		for (uint32_t p = 0; p < a_->cfg.n_paths; p++) {
			res_.path_failures += a_->tx_path[p].failures;
			res_.path_rerolls += a_->tx_path[p].rerolls;
			res_.failures_per_path.push_back(a_->tx_path[p].failures);
			res_.final_entropy.push_back(a_->tx_path[p].entropy);
		}
	}

	bool chance(double p)
	{
		return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
	}

	FabricConfig fc_;
	Workload wl_;
	std::mt19937_64 rng_;
	StreamPool pool_;	// before the engines: freed after them
	std::unique_ptr<mr_conn> a_, b_, stale_;
	mr_hs_local la_{}, lb_{};
	mr_hs ha_{}, hb_{};
	mr_conn_ops ops_{};
	std::vector<uint64_t> counter_, expect_counter_;
	std::map<std::pair<uint32_t, uint32_t>, uint64_t> expect_orig_;
	std::map<std::pair<uint32_t, uint32_t>, uint64_t> read_bytes_;
	std::set<std::pair<uint32_t, uint32_t>> executed_;
	uint64_t tx_free_b_ = 0;
	std::vector<std::vector<uint32_t>> per_stream_;
	std::vector<uint32_t> next_post_, next_send_done_, next_recv_done_, rsn_done_;
	std::priority_queue<Flight> q_;
	std::vector<uint64_t> link_last_;
	std::vector<uint64_t> link_busy_;	// when each link's bottleneck is free
	uint32_t full_pkt_ = 0;		// a full-size packet on the wire, framing included
	std::set<std::tuple<uint32_t, uint32_t, uint32_t>> placed_;
	std::map<std::pair<uint32_t, uint32_t>, std::vector<uint8_t>> rxbuf_;
	uint64_t tx_free_ = 0;
	uint64_t last_done_ns_ = 0;	// the last message completion
	uint64_t seq_ = 0;
	Result res_;
};

} // namespace mrsim
