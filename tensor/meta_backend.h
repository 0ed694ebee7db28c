// meta_backend.h — the meta device's record of its allocations (the device
// itself: tensor/meta_backend.cpp, reached through backend_for(kMeta)).
//
// A dry run (train/memory_plan.cpp) records one training step and replays
// the record to find what was live at the peak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nc {

// One allocation or free: the block's fake address (never reused, so it
// names the block for the whole run), its size class, and which it was.
struct MetaEvent {
    std::uintptr_t block;
    size_t bytes;
    bool allocated;
};

// Starts a record (dropping any earlier one) that opens with every block
// live at this moment, as handed out: replaying it from nothing gives the
// blocks in use at any point after the start.
void start_meta_record();
// How many events the record holds so far (an index into it).
size_t meta_record_size();
// The events from index `first` on, without stopping.
std::vector<MetaEvent> meta_record_since(size_t first);
// Ends the record and returns it; the meta device records nothing more.
std::vector<MetaEvent> stop_meta_record();

}  // namespace nc
