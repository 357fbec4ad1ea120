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
}

namespace mrsim {

struct FabricConfig {
	uint32_t links = 8;
	double line_gbps = 100.0;
	uint64_t base_latency_ns = 4000;
	uint64_t latency_step_ns = 400;	// link i adds i * step
	double loss = 0.0;		// both directions
	double dup = 0.0;
	double reorder = 0.0;		// within a link
	int blackhole_link = -1;	// data direction only
	uint64_t time_limit_ns = 2'000'000'000ULL;
};

struct Workload {
	uint32_t streams = 4;
	std::vector<uint32_t> sizes;	// message sizes, posted round-robin over streams
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
	std::vector<uint16_t> initial_entropy;
	std::vector<uint16_t> final_entropy;
	std::vector<uint32_t> failures_per_path;
	uint64_t packets = 0;
	uint32_t rx_duplicates = 0;
	std::string diag;	// engine state when the run did not finish cleanly

	double goodput_gbps() const { return finish_ns ? bytes * 8.0 / finish_ns : 0; }
};

inline uint8_t pattern(uint32_t slot, uint32_t msn, uint32_t i)
{
	return static_cast<uint8_t>(slot * 31 + msn * 7 + i * 13 + (i >> 8));
}

inline uint32_t link_of(uint16_t entropy, uint32_t links)
{
	return ((entropy * 2654435761u) >> 16) % links;
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
		cb = ca;
		cb.local_conn_id = ca.peer_conn_id;
		cb.peer_conn_id = ca.local_conn_id;
		cb.tx_initial_psn = ca.rx_initial_psn;
		cb.rx_initial_psn = ca.tx_initial_psn;
		cb.seed = rng_();
		a_ = std::make_unique<mr_conn>();
		b_ = std::make_unique<mr_conn>();
		mr_conn_init(a_.get(), &ca);
		mr_conn_init(b_.get(), &cb);
		for (uint32_t s = 0; s < wl_.streams; s++) {
			mr_conn_open_stream(a_.get(), 100 + s, 200 + s);
			mr_conn_open_stream(b_.get(), 200 + s, 100 + s);
		}
		per_stream_.resize(wl_.streams);
		for (size_t i = 0; i < wl_.sizes.size(); i++)
			per_stream_[i % wl_.streams].push_back(wl_.sizes[i]);
		next_post_.assign(wl_.streams, 0);
		next_send_done_.assign(wl_.streams, 0);
		next_recv_done_.assign(wl_.streams, 0);
		for (uint32_t p = 0; p < a_->cfg.n_paths; p++)
			res_.initial_entropy.push_back(a_->tx_path[p].entropy);
		link_last_.assign(2 * fc_.links, 0);
	}

	Result run()
	{
		uint64_t now = 0;
		post_all();
		while (now < fc_.time_limit_ns) {
			mr_conn_on_timer(a_.get(), now);
			mr_conn_on_timer(b_.get(), now);
			bool sent = transmit(now);
			acks(now);
			if (all_done()) {
				if (!res_.completed) {
					res_.completed = true;
					res_.finish_ns = now;
				}
				if (mr_conn_quiescent(a_.get()) && mr_conn_quiescent(b_.get()) &&
				    q_.empty()) {
					res_.quiescent = true;
					break;
				}
			}
			uint64_t t = fc_.time_limit_ns;
			if (!q_.empty())
				t = std::min(t, q_.top().t);
			t = std::min(t, mr_conn_next_deadline(a_.get()));
			t = std::min(t, mr_conn_next_deadline(b_.get()));
			if (sent)
				t = std::min(t, tx_free_);
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

private:
	struct Flight {
		uint64_t t;
		uint64_t seq;
		bool to_b;
		std::vector<uint8_t> bytes;
		bool operator<(const Flight &o) const
		{
			return t != o.t ? t > o.t : seq > o.seq;
		}
	};

	void error(const std::string &e)
	{
		if (res_.errors.size() < 20)
			res_.errors.push_back(e);
	}

	void post_all()
	{
		for (uint32_t s = 0; s < wl_.streams; s++) {
			while (next_post_[s] < per_stream_[s].size()) {
				uint32_t msn = next_post_[s];
				uint8_t op = (msn % 3 == 2) ? MR_OP_WRITE : MR_OP_SEND;
				uint64_t va = 0x10000000ULL * (s + 1) + msn * 0x100000ULL;
				if (mr_conn_post(a_.get(), s, op, per_stream_[s][msn], va, 0x77 + s,
						 (uint64_t(s) << 32) | msn))
					break;
				next_post_[s]++;
			}
		}
	}

	bool transmit(uint64_t now)
	{
		if (tx_free_ > now)
			return true;
		mr_tx_desc d;
		if (!mr_conn_next_packet(a_.get(), now, &d))
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
		if (static_cast<int>(link) == fc_.blackhole_link)
			return true;
		send(std::move(bytes), true, link, now);
		return true;
	}

	void send(std::vector<uint8_t> bytes, bool to_b, uint32_t link, uint64_t now)
	{
		if (chance(fc_.loss))
			return;
		uint64_t lat = fc_.base_latency_ns + link * fc_.latency_step_ns;
		uint64_t &last = link_last_[link * 2 + (to_b ? 0 : 1)];
		uint64_t t = std::max(now + lat, last);
		if (chance(fc_.reorder) && t > lat / 2 + now)
			t = now + lat / 2;	// overtakes packets ahead of it on the link
		else
			last = t;
		if (chance(fc_.dup))
			q_.push({ t + 50, seq_++, to_b, bytes });
		q_.push({ t, seq_++, to_b, std::move(bytes) });
	}

	void deliver(const Flight &f, uint64_t now)
	{
		mr_pkt pkt;
		if (mr_pkt_parse(f.bytes.data(), static_cast<u32>(f.bytes.size()), &pkt) !=
		    MR_PARSE_OK) {
			error("parser rejected a packet the engine built");
			return;
		}
		if (!f.to_b) {
			mr_place pl;
			mr_conn_receive(a_.get(), now, &pkt, false, &pl);
			poll(now);
			return;
		}
		mr_place pl;
		if (mr_conn_receive(b_.get(), now, &pkt, false, &pl) == MR_RX_RESULT_PLACE)
			place(pl);
		poll(now);
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
		while (mr_conn_poll_completion(b_.get(), &c)) {
			uint32_t s = c.stream_slot;
			if (c.kind != MR_COMPL_RECV || s >= wl_.streams) {
				error("unexpected completion at the receiver");
				continue;
			}
			if (c.msn != next_recv_done_[s])
				error("receive completion out of MSN order");
			next_recv_done_[s] = c.msn + 1;
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
			res_.bytes += c.len;
			rxbuf_.erase({ s, c.msn });
		}
		while (mr_conn_poll_completion(a_.get(), &c)) {
			uint32_t s = c.stream_slot;
			if (c.kind != MR_COMPL_SEND || s >= wl_.streams) {
				error("unexpected completion at the sender");
				continue;
			}
			if (c.msn != next_send_done_[s])
				error("send completion out of MSN order");
			if (c.cookie != ((uint64_t(s) << 32) | c.msn))
				error("send completion cookie wrong");
			next_send_done_[s] = c.msn + 1;
		}
		post_all();
		(void)now;
	}

	void acks(uint64_t now)
	{
		mr_pkt ack;
		while (mr_conn_next_ack(b_.get(), now, &ack)) {
			std::vector<uint8_t> bytes(MR_MAX_HDR_LEN);
			bytes.resize(mr_pkt_build(&ack, bytes.data(), MR_MAX_HDR_LEN));
			send(std::move(bytes), false, ack.bth.path_id % fc_.links, now);
		}
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
			const mr_tx_stream &ts = a_->tx[s];
			const mr_rx_stream &rs = b_->rx[s];
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
		if (!res_.completed || !res_.quiescent)
			diagnose();
		res_.retransmits = a_->retransmits;
		res_.rx_duplicates = b_->rx_duplicates;
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
	std::unique_ptr<mr_conn> a_, b_;
	std::vector<std::vector<uint32_t>> per_stream_;
	std::vector<uint32_t> next_post_, next_send_done_, next_recv_done_;
	std::priority_queue<Flight> q_;
	std::vector<uint64_t> link_last_;
	std::set<std::tuple<uint32_t, uint32_t, uint32_t>> placed_;
	std::map<std::pair<uint32_t, uint32_t>, std::vector<uint8_t>> rxbuf_;
	uint64_t tx_free_ = 0;
	uint64_t seq_ = 0;
	Result res_;
};

} // namespace mrsim
