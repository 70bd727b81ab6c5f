// SimGrid peer for netsteer's benchmarks: start every flow of a list at t=0 on a
// platform and report the simulated makespan and the wall time of the simulation.
//
// usage: simgrid_flows PLATFORM.xml FLOWS.txt [--cfg=...]
//   FLOWS.txt: one "src_host dst_host bytes" per line (host names of the platform)
#include <simgrid/s4u.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

struct Flow {
  std::string src, dst;
  uint64_t bytes;
};

static std::vector<Flow> flows;
static std::vector<double> done_at;

static void starter()
{
  auto* e = sg4::Engine::get_instance();
  std::vector<sg4::CommPtr> comms;
  comms.reserve(flows.size());
  for (auto const& f : flows)
    comms.push_back(sg4::Comm::sendto_async(e->host_by_name(f.src), e->host_by_name(f.dst), f.bytes));
  sg4::Comm::wait_all(comms);
}

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml FLOWS.txt\n", argv[0]);
    return 2;
  }
  e.load_platform(argv[1]);
  std::ifstream in(argv[2]);
  Flow f;
  while (in >> f.src >> f.dst >> f.bytes)
    flows.push_back(f);
  sg4::Actor::create("starter", e.get_all_hosts().front(), starter);
  auto t0 = std::chrono::steady_clock::now();
  e.run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"flows\": %zu, \"makespan_s\": %.9f, \"wall_s\": %.6f}\n", flows.size(), sg4::Engine::get_clock(), wall);
  return 0;
}
