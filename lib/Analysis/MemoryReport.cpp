//===- MemoryReport.cpp - memory reports: table, JSON, HTML ---------------===//

#include "vram/Analysis/MemoryReport.h"
#include "vram/Support/ByteSize.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <set>

using namespace mlir;

namespace vram {

llvm::ArrayRef<llvm::StringRef> getReportIncludes() {
  static const llvm::StringRef includes[] = {
      "every tensor live at a program point, at its exact size "
      "(elements x element bytes)",
      "arguments (parameters, state, inputs) at every point: the caller "
      "owns them",
      "storage shared by views, non-copying reshapes and destination-passing "
      "results counted once",
      "kernel workspace where an op declares one (category workspace)"};
  return includes;
}

llvm::ArrayRef<llvm::StringRef> getReportExcludes() {
  static const llvm::StringRef excludes[] = {
      "the CUDA context and library handles (see the budget line for the "
      "reserve a device profile subtracts)",
      "allocator rounding and fragmentation (vram-opt's static arena "
      "leaves holes between buffers: a plan's vram.lowered_peak counts "
      "them; PyTorch's caching allocator rounds blocks to 512 bytes)",
      "host memory"};
  return excludes;
}

std::string getLayerName(Operation *op, unsigned depth) {
  std::string name = getOpName(op);
  SmallVector<StringRef> parts;
  StringRef(name).split(parts, '/', -1, /*KeepEmpty=*/false);
  if (parts.size() <= 1)
    return parts.empty() ? name : parts.front().str();
  parts.pop_back(); // the op itself ("Conv")
  if (parts.size() > depth)
    parts.resize(depth);
  return llvm::join(parts, "/");
}

namespace {

std::string opDescription(Operation *op) {
  return (op->getName().getStringRef() + " '" + getOpName(op) + "'").str();
}

/// Buffers by size, largest first; ties by program order.
SmallVector<unsigned> largestBuffers(const MemoryAnalysis &analysis,
                                     unsigned count) {
  SmallVector<unsigned> order(analysis.getBuffers().size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  auto buffers = analysis.getBuffers();
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  if (order.size() > count)
    order.resize(count);
  return order;
}

struct LayerTotals {
  unsigned ops = 0;
  uint64_t producedBytes = 0;  // buffers its ops allocate
  uint64_t parameterBytes = 0; // arguments its ops read first
};

/// Layers in order of their first op.
using LayerMap = llvm::MapVector<std::string, LayerTotals,
                                 std::map<std::string, unsigned>>;

LayerMap computeLayers(const MemoryAnalysis &analysis, unsigned depth) {
  LayerMap layers;
  llvm::DenseSet<unsigned> seenArguments;
  for (Operation *op : analysis.getSchedule()) {
    // Ops that are no ONNX node (onnx.NoValue) belong to no layer.
    if (!isa<NameLoc>(op->getLoc()))
      continue;
    LayerTotals &layer = layers[getLayerName(op, depth)];
    ++layer.ops;
    for (Value result : op->getResults()) {
      const Buffer &buffer = analysis.getBuffer(result);
      if (buffer.root == result)
        layer.producedBytes += buffer.bytes;
    }
    for (Value operand : op->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || arg.getOwner() != op->getBlock())
        continue;
      const Buffer &buffer = analysis.getBuffer(arg);
      if (buffer.category != MemoryCategory::Input &&
          seenArguments.insert(arg.getArgNumber()).second)
        layer.parameterBytes += buffer.bytes;
    }
  }
  return layers;
}

/// "phases": the peak of each phase and its groups (JSON report and HTML).
void writePhasesJSON(const MemoryAnalysis &analysis,
                     llvm::json::OStream &json) {
  json.attributeArray("phases", [&] {
    for (const PhasePeak &phase : computePhasePeaks(analysis)) {
      json.objectBegin();
      json.attribute("phase", phase.phase);
      json.attribute("peak", phase.bytes);
      json.attribute("point", phase.point);
      json.attribute("model_states", phase.groups.modelStates);
      json.attribute("saved_activations", phase.groups.savedActivations);
      json.attribute("transient", phase.groups.transient);
      json.attribute("other", phase.groups.other);
      json.objectEnd();
    }
  });
}

void printPhaseTable(const MemoryAnalysis &analysis, llvm::raw_ostream &os) {
  SmallVector<PhasePeak> phases = computePhasePeaks(analysis);
  if (phases.empty())
    return;
  os << "  Peak of each phase (model states = parameters + gradients + "
        "optimizer state):\n";
  os << llvm::format("  %-10s %16s %8s %16s %16s %16s %16s\n", "phase",
                     "peak bytes", "at op", "model states", "saved activ.",
                     "transient", "other");
  for (const PhasePeak &phase : phases)
    os << llvm::format("  %-10s %16s %8u %16s %16s %16s %16s\n",
                       phase.phase.str().c_str(),
                       formatExactBytes(phase.bytes).c_str(), phase.point + 1,
                       formatExactBytes(phase.groups.modelStates).c_str(),
                       formatExactBytes(phase.groups.savedActivations).c_str(),
                       formatExactBytes(phase.groups.transient).c_str(),
                       formatExactBytes(phase.groups.other).c_str());
  os << "\n";
}

void printBudgetLine(const MemoryAnalysis &analysis,
                     const MemoryReportOptions &options, llvm::raw_ostream &os) {
  if (!options.budget)
    return;
  uint64_t budget = *options.budget, peak = analysis.getPeakBytes();
  os << "  Budget: " << formatBinaryBytes(budget) << " ("
     << formatExactBytes(budget) << " bytes = " << formatDecimalBytes(budget)
     << ")";
  if (!options.budgetSource.empty())
    os << " from " << options.budgetSource;
  os << "\n          ";
  if (peak <= budget)
    os << "fits: " << formatBinaryBytes(budget - peak) << " to spare\n";
  else
    os << "does NOT fit: the peak exceeds it by "
       << formatBinaryBytes(peak - budget) << " ("
       << formatExactBytes(peak - budget) << " bytes)\n";
}

} // namespace

MemoryGroups groupCategories(const CategoryBytes &bytes) {
  MemoryGroups groups;
  for (unsigned c = 0; c < kNumMemoryCategories; ++c) {
    switch (categoryAt(c)) {
    case MemoryCategory::Parameter:
    case MemoryCategory::Gradient:
    case MemoryCategory::OptimizerState:
      groups.modelStates += bytes[c];
      break;
    case MemoryCategory::SavedActivation:
      groups.savedActivations += bytes[c];
      break;
    case MemoryCategory::Activation:
    case MemoryCategory::Workspace:
    case MemoryCategory::Communication:
      groups.transient += bytes[c];
      break;
    case MemoryCategory::State:
    case MemoryCategory::Input:
    case MemoryCategory::Output:
      groups.other += bytes[c];
      break;
    }
  }
  return groups;
}

SmallVector<PhasePeak> computePhasePeaks(const MemoryAnalysis &analysis) {
  static constexpr llvm::StringLiteral kPhases[] = {"forward", "backward",
                                                    "optimizer"};
  std::optional<PhasePeak> peaks[std::size(kPhases)];
  bool tagged = false;
  for (auto [point, op] : llvm::enumerate(analysis.getSchedule())) {
    std::optional<Phase> tag = getPhase(op);
    tagged |= tag.has_value();
    StringRef phase = tag ? stringifyPhase(*tag) : StringRef("forward");
    auto *known = llvm::find(kPhases, phase);
    if (known == std::end(kPhases))
      continue;
    std::optional<PhasePeak> &peak = peaks[known - std::begin(kPhases)];
    uint64_t bytes = analysis.getLiveBytes(point);
    if (!peak || bytes > peak->bytes)
      peak = PhasePeak{*known, bytes, unsigned(point),
                       groupCategories(analysis.getTimeline()[point])};
  }
  SmallVector<PhasePeak> phases;
  if (tagged)
    for (const std::optional<PhasePeak> &peak : peaks)
      if (peak)
        phases.push_back(*peak);
  return phases;
}

std::string formatPlanSummary(const PlanSummary &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "budget " << formatExactBytes(plan.budget) << " B, planned peak "
     << formatExactBytes(plan.plannedPeak) << " B";
  if (plan.loweredPeak)
    os << ", " << formatExactBytes(*plan.loweredPeak)
       << " B on the device once lowered";
  os << " (unplanned " << formatExactBytes(plan.unplannedPeak) << " B); "
     << plan.recomputations << " recomputations, "
     << formatExactBytes(plan.offloadedBytes) << " B offloaded, "
     << plan.hostArguments << " arguments in host memory ("
     << formatExactBytes(plan.hostArgumentBytes) << " B); overhead "
     << llvm::format("%.1f%%", plan.overhead() * 100) << " of "
     << formatSeconds(plan.computeSeconds) << " (recompute "
     << formatSeconds(plan.recomputeSeconds) << ", exposed copies "
     << formatSeconds(plan.exposedCopySeconds) << ") on " << plan.device;
  return text;
}

/// The "plan" object of the JSON report and of the HTML page's data.
static void writePlanJSON(const PlanSummary &plan, llvm::json::OStream &json) {
  json.attributeObject("plan", [&] {
    json.attribute("budget", plan.budget);
    json.attribute("planned_peak", plan.plannedPeak);
    if (plan.loweredPeak)
      json.attribute("lowered_peak", *plan.loweredPeak);
    json.attribute("unplanned_peak", plan.unplannedPeak);
    json.attribute("recomputations", plan.recomputations);
    json.attribute("offloaded_bytes", plan.offloadedBytes);
    json.attribute("host_arguments", plan.hostArguments);
    json.attribute("host_argument_bytes", plan.hostArgumentBytes);
    json.attribute("overhead", plan.overhead());
    json.attribute("compute_seconds", plan.computeSeconds);
    json.attribute("recompute_seconds", plan.recomputeSeconds);
    json.attribute("exposed_copy_seconds", plan.exposedCopySeconds);
    json.attribute("device", plan.device);
  });
}

void printMemoryTable(const MemoryAnalysis &analysis, StringRef function,
                      const MemoryReportOptions &options, llvm::raw_ostream &os) {
  auto schedule = analysis.getSchedule();
  uint64_t peak = analysis.getPeakBytes();
  if (options.plan)
    os << "Plan of @" << function << ": " << formatPlanSummary(*options.plan)
       << "\n";
  os << "Memory of @" << function << ": " << schedule.size()
     << " ops, in the order of the IR\n";
  os << "  Peak: " << formatBinaryBytes(peak) << " (" << formatExactBytes(peak)
     << " bytes = " << formatDecimalBytes(peak) << ")\n";
  if (Operation *op = analysis.getPeakOp())
    os << "  at op " << analysis.getPeakPoint() + 1 << " of "
       << schedule.size() << ": " << opDescription(op) << "\n";
  printBudgetLine(analysis, options, os);
  os << "  Includes: " << llvm::join(getReportIncludes(), "; ") << ".\n";
  os << "  Excludes: " << llvm::join(getReportExcludes(), "; ") << ".\n\n";

  const CategoryBytes &atPeak =
      schedule.empty() ? analysis.getTotals()
                       : analysis.getTimeline()[analysis.getPeakPoint()];
  os << llvm::format("  %-34s %12s %16s   %12s %16s\n", "category",
                     "at peak", "bytes", "all buffers", "bytes");
  for (unsigned c = 0; c < kNumMemoryCategories; ++c) {
    uint64_t total = analysis.getTotals()[c];
    if (total == 0)
      continue;
    os << llvm::format("  %-34s %12s %16s   %12s %16s\n",
                       getCategoryTitle(categoryAt(c)).str().c_str(),
                       formatBinaryBytes(atPeak[c]).c_str(),
                       formatExactBytes(atPeak[c]).c_str(),
                       formatBinaryBytes(total).c_str(),
                       formatExactBytes(total).c_str());
  }
  os << llvm::format("  %-34s %12s %16s\n\n", "total at peak",
                     formatBinaryBytes(peak).c_str(),
                     formatExactBytes(peak).c_str());
  printPhaseTable(analysis, os);

  os << "  Largest tensors:\n";
  os << llvm::format("  %12s %16s  %-18s %-13s  %s\n", "size", "bytes",
                     "category", "live at ops", "value : type");
  for (unsigned index : largestBuffers(analysis, options.topTensors)) {
    const Buffer &buffer = analysis.getBuffers()[index];
    std::string range = std::to_string(buffer.begin + 1) + "-" +
                        std::to_string(buffer.end + 1);
    os << llvm::format("  %12s %16s  %-18s %-13s  ",
                       formatBinaryBytes(buffer.bytes).c_str(),
                       formatExactBytes(buffer.bytes).c_str(),
                       getCategoryKey(buffer.category).str().c_str(),
                       range.c_str())
       << getBufferName(buffer) << " : " << getBufferTypeString(buffer)
       << "\n";
  }

  auto layers = computeLayers(analysis, options.layerDepth);
  os << "\n  Per layer (node-name prefix, depth " << options.layerDepth
     << "):\n";
  os << llvm::format("  %-40s %5s %12s %12s\n", "layer", "ops", "allocates",
                     "reads args");
  for (const auto &[name, layer] : layers)
    os << llvm::format("  %-40s %5u %12s %12s\n", name.c_str(), layer.ops,
                       formatBinaryBytes(layer.producedBytes).c_str(),
                       formatBinaryBytes(layer.parameterBytes).c_str());
}

void printMemoryJSON(const MemoryAnalysis &analysis, StringRef function,
                     const MemoryReportOptions &options, llvm::raw_ostream &os) {
  auto schedule = analysis.getSchedule();
  auto buffers = analysis.getBuffers();
  llvm::json::OStream json(os, 1);
  auto categoryObject = [&](const CategoryBytes &bytes) {
    json.objectBegin();
    for (unsigned c = 0; c < kNumMemoryCategories; ++c)
      json.attribute(getCategoryKey(categoryAt(c)), bytes[c]);
    json.objectEnd();
  };
  json.objectBegin();
  json.attribute("schema", "vram-opt.memory-report");
  json.attribute("version", kMemoryReportSchemaVersion);
  json.attribute("function", function);
  json.attribute("units", "bytes");
  if (options.plan)
    writePlanJSON(*options.plan, json);
  json.attributeArray("includes", [&] {
    for (StringRef text : getReportIncludes())
      json.value(text);
  });
  json.attributeArray("excludes", [&] {
    for (StringRef text : getReportExcludes())
      json.value(text);
  });
  json.attributeArray("categories", [&] {
    for (unsigned c = 0; c < kNumMemoryCategories; ++c)
      json.value(getCategoryKey(categoryAt(c)));
  });
  json.attributeObject("peak", [&] {
    json.attribute("bytes", analysis.getPeakBytes());
    json.attribute("point", analysis.getPeakPoint());
    if (Operation *op = analysis.getPeakOp()) {
      json.attribute("op", op->getName().getStringRef());
      json.attribute("node", getOpName(op));
      json.attributeBegin("by_category");
      categoryObject(analysis.getTimeline()[analysis.getPeakPoint()]);
      json.attributeEnd();
    }
  });
  json.attributeBegin("totals");
  categoryObject(analysis.getTotals());
  json.attributeEnd();
  writePhasesJSON(analysis, json);
  if (options.budget) {
    json.attributeObject("budget", [&] {
      json.attribute("bytes", *options.budget);
      json.attribute("source", options.budgetSource);
      json.attribute("fits", analysis.getPeakBytes() <= *options.budget);
    });
  }
  json.attributeArray("tensors", [&] {
    for (const Buffer &buffer : buffers) {
      json.objectBegin();
      json.attribute("name", getBufferName(buffer));
      json.attribute("type", getBufferTypeString(buffer));
      json.attribute("bytes", buffer.bytes);
      json.attribute("category", getCategoryKey(buffer.category));
      json.attribute("begin", buffer.begin);
      json.attribute("end", buffer.end);
      json.objectEnd();
    }
  });
  json.attributeArray("layers", [&] {
    for (const auto &[name, layer] :
         computeLayers(analysis, options.layerDepth)) {
      json.objectBegin();
      json.attribute("name", name);
      json.attribute("ops", layer.ops);
      json.attribute("allocates", layer.producedBytes);
      json.attribute("reads_args", layer.parameterBytes);
      json.objectEnd();
    }
  });
  json.attributeObject("timeline", [&] {
    json.attributeArray("ops", [&] {
      for (Operation *op : schedule)
        json.value(op->getName().getStringRef());
    });
    json.attributeArray("nodes", [&] {
      for (Operation *op : schedule)
        json.value(getOpName(op));
    });
    json.attributeObject("live_bytes", [&] {
      for (unsigned c = 0; c < kNumMemoryCategories; ++c)
        json.attributeArray(getCategoryKey(categoryAt(c)), [&] {
          for (const CategoryBytes &point : analysis.getTimeline())
            json.value(point[c]);
        });
    });
  });
  json.objectEnd();
  os << "\n";
}

namespace {
/// Points to plot: all of them, or for long schedules the largest point of
/// each of `maxPoints` equal buckets (so the peak is always drawn).
std::vector<unsigned> samplePoints(const MemoryAnalysis &analysis,
                                   unsigned maxPoints) {
  unsigned count = analysis.getSchedule().size();
  std::vector<unsigned> points;
  if (count <= maxPoints) {
    for (unsigned p = 0; p < count; ++p)
      points.push_back(p);
    return points;
  }
  for (unsigned bucket = 0; bucket < maxPoints; ++bucket) {
    unsigned begin = uint64_t(bucket) * count / maxPoints;
    unsigned end = uint64_t(bucket + 1) * count / maxPoints;
    unsigned best = begin;
    for (unsigned p = begin; p < end; ++p)
      if (analysis.getLiveBytes(p) > analysis.getLiveBytes(best))
        best = p;
    points.push_back(best);
  }
  return points;
}

/// The `count` largest buffers live at each of `points` (ascending), by a
/// sweep over buffer begin/end events.
std::vector<SmallVector<unsigned>>
largestLiveBuffers(const MemoryAnalysis &analysis,
                   const std::vector<unsigned> &points, unsigned count) {
  auto buffers = analysis.getBuffers();
  unsigned numPoints = analysis.getSchedule().size();
  if (numPoints == 0)
    return {};
  std::vector<SmallVector<unsigned>> beginsAt(numPoints), endsAt(numPoints);
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    beginsAt[buffer.begin].push_back(index);
    endsAt[buffer.end].push_back(index);
  }
  std::set<std::pair<uint64_t, unsigned>> live;
  std::vector<SmallVector<unsigned>> result;
  unsigned next = 0;
  for (unsigned p = 0; p < numPoints && next < points.size(); ++p) {
    for (unsigned index : beginsAt[p])
      live.insert({buffers[index].bytes, index});
    if (points[next] == p) {
      SmallVector<unsigned> top;
      for (auto it = live.rbegin(); it != live.rend() && top.size() < count;
           ++it)
        top.push_back(it->second);
      result.push_back(top);
      ++next;
    }
    for (unsigned index : endsAt[p])
      live.erase({buffers[index].bytes, index});
  }
  return result;
}

// The page: data goes in as one JSON object; the script draws an SVG.
constexpr llvm::StringLiteral kHtmlHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>vram-opt memory timeline</title>
<style>
body{font:14px system-ui,sans-serif;margin:20px;color:#222}
h1{font-size:18px;margin:0 0 4px} .sub{color:#555;margin-bottom:12px}
#chart{position:relative} svg{display:block}
#tip{position:absolute;pointer-events:none;background:#fff;border:1px solid #999;
 padding:6px 8px;font-size:12px;box-shadow:0 2px 6px #0003;display:none;white-space:nowrap}
.legend span{display:inline-block;margin-right:14px} .legend i{display:inline-block;
 width:12px;height:12px;margin-right:4px;vertical-align:-1px}
.notes{color:#555;font-size:12px;max-width:1000px}
</style></head><body>
<h1 id="title"></h1><div class="sub" id="plan"></div><div class="sub" id="summary"></div>
<div class="legend" id="legend"></div>
<div id="chart"><svg id="svg" width="1100" height="460"></svg><div id="tip"></div></div>
<div class="notes" id="notes"></div>
<script>
const data = )html";

constexpr llvm::StringLiteral kHtmlScript = R"html(;
// Names come from the model file: escaped before they go into HTML.
const esc = v => String(v).replace(/[&<>"']/g, c => "&#" + c.charCodeAt(0) + ";");
const colors = {parameter:"#4e79a7",state:"#9c755f",input:"#76b7b2",
 saved_activation:"#e15759",activation:"#f28e2b",output:"#59a14f",
 gradient:"#b07aa1",optimizer_state:"#edc948",workspace:"#bab0ac",
 communication:"#ff9da7"};
function fmt(b){const u=["B","KiB","MiB","GiB","TiB"];let i=0;
 while(b>=1024&&i<u.length-1){b/=1024;i++;}return (i?b.toFixed(2):b)+" "+u[i];}
const W=1100,H=460,L=80,R=20,T=20,B=40,w=W-L-R,h=H-T-B;
const n=data.points.length, cats=data.categories.filter(c=>data.live[c].some(v=>v>0));
const totals=data.points.map((_,i)=>cats.reduce((s,c)=>s+data.live[c][i],0));
const ymax=Math.max(data.peak.bytes,data.budget||0,
 data.plan?data.plan.unplanned_peak:0)*1.05||1;
const x=i=>L+(n>1?i*w/(n-1):w/2), y=v=>T+h-v*h/ymax;
const svg=document.getElementById("svg"), NS="http://www.w3.org/2000/svg";
function el(tag,attrs,parent){const e=document.createElementNS(NS,tag);
 for(const k in attrs)e.setAttribute(k,attrs[k]);(parent||svg).appendChild(e);return e;}
let base=new Array(n).fill(0);
for(const c of cats){const top=base.map((b,i)=>b+data.live[c][i]);let d="";
 for(let i=0;i<n;i++)d+=(i?"L":"M")+x(i)+","+y(top[i]);
 for(let i=n-1;i>=0;i--)d+="L"+x(i)+","+y(base[i]);
 el("path",{d:d+"Z",fill:colors[c]||"#999",opacity:0.9});base=top;}
for(let k=0;k<=5;k++){const v=ymax*k/5;el("line",{x1:L,x2:L+w,y1:y(v),y2:y(v),stroke:"#0001"});
 const t=el("text",{x:L-6,y:y(v)+4,"text-anchor":"end","font-size":11});t.textContent=fmt(v);}
el("line",{x1:L,x2:L,y1:T,y2:T+h,stroke:"#333"});el("line",{x1:L,x2:L+w,y1:T+h,y2:T+h,stroke:"#333"});
const xl=el("text",{x:L+w/2,y:H-8,"text-anchor":"middle","font-size":12});
xl.textContent="program point (op in schedule order)";
if(data.budget){el("line",{x1:L,x2:L+w,y1:y(data.budget),y2:y(data.budget),stroke:"#c00",
 "stroke-dasharray":"6,4","stroke-width":2});const t=el("text",{x:L+w-4,y:y(data.budget)-5,
 "text-anchor":"end",fill:"#c00","font-size":12});t.textContent="budget "+fmt(data.budget);}
if(data.plan){const u=data.plan.unplanned_peak;el("line",{x1:L,x2:L+w,y1:y(u),y2:y(u),
 stroke:"#555","stroke-dasharray":"2,3","stroke-width":1.5});const t=el("text",{x:L+4,
 y:y(u)-5,fill:"#555","font-size":12});t.textContent="unplanned peak "+fmt(u);}
const cursor=el("line",{x1:0,x2:0,y1:T,y2:T+h,stroke:"#000",opacity:0});
const tip=document.getElementById("tip");
svg.addEventListener("mousemove",ev=>{const r=svg.getBoundingClientRect();
 const px=ev.clientX-r.left;if(px<L||px>L+w){tip.style.display="none";cursor.setAttribute("opacity",0);return;}
 const i=Math.max(0,Math.min(n-1,Math.round((px-L)*(n-1)/w)));const p=data.points[i];
 cursor.setAttribute("x1",x(i));cursor.setAttribute("x2",x(i));cursor.setAttribute("opacity",0.5);
 let s="<b>op "+(p.point+1)+": "+esc(p.op)+"</b><br>"+esc(p.node)+"<br>live: <b>"+fmt(totals[i])+"</b><br>";
 for(const c of cats)if(data.live[c][i])s+='<i style="display:inline-block;width:9px;height:9px;background:'+colors[c]+'"></i> '+c+": "+fmt(data.live[c][i])+"<br>";
 s+="largest live tensors:<br>";for(const t of p.top)s+="&nbsp;"+fmt(t.bytes)+" "+esc(t.name)+" ("+esc(t.category)+")<br>";
 tip.innerHTML=s;tip.style.display="block";
 tip.style.left=Math.min(px+14,W-300)+"px";tip.style.top=(ev.clientY-r.top+10)+"px";});
svg.addEventListener("mouseleave",()=>{tip.style.display="none";cursor.setAttribute("opacity",0);});
document.getElementById("title").textContent="Memory of @"+data.function;
if(data.plan){const p=data.plan;document.getElementById("plan").innerHTML=
 "<b>plan</b> for a budget of "+fmt(p.budget)+": planned peak <b>"+fmt(p.planned_peak)+"</b>"+
 (p.lowered_peak!==undefined?", "+fmt(p.lowered_peak)+" on the device once lowered":"")+
 ", unplanned "+fmt(p.unplanned_peak)+" &middot; "+p.recomputations+" recomputations, "+
 fmt(p.offloaded_bytes)+" offloaded, "+p.host_arguments+" arguments in host memory ("+
 fmt(p.host_argument_bytes)+") &middot; overhead "+(100*p.overhead).toFixed(1)+"% of "+
 (1e3*p.compute_seconds).toPrecision(3)+" ms (recompute "+(1e3*p.recompute_seconds).toPrecision(3)+
 " ms, exposed copies "+(1e3*p.exposed_copy_seconds).toPrecision(3)+" ms) on "+esc(p.device);}
document.getElementById("summary").innerHTML="peak <b>"+fmt(data.peak.bytes)+"</b> ("+
 data.peak.bytes.toLocaleString("en-US")+" bytes) at op "+(data.peak.point+1)+": "+esc(data.peak.op)+" "+esc(data.peak.node)+
 (data.budget?" &middot; budget "+fmt(data.budget)+(data.peak.bytes<=data.budget?" (fits)":" (does not fit)"):"")+
 " &middot; "+data.num_ops+" ops"+(n<data.num_ops?", "+n+" sampled points":"")+
 (data.phases.length?" &middot; phase peaks: "+data.phases.map(p=>esc(p.phase)+" "+fmt(p.peak)+
 " (op "+(p.point+1)+")").join(", "):"");
document.getElementById("legend").innerHTML=cats.map(c=>'<span><i style="background:'+
 colors[c]+'"></i>'+c+"</span>").join("");
document.getElementById("notes").innerHTML="Includes: "+data.includes.join("; ")+
 ".<br>Excludes: "+data.excludes.join("; ")+".";
</script></body></html>
)html";
} // namespace

void printMemoryHTML(const MemoryAnalysis &analysis, StringRef function,
                     const MemoryReportOptions &options, llvm::raw_ostream &os,
                     unsigned maxPoints) {
  auto schedule = analysis.getSchedule();
  auto buffers = analysis.getBuffers();
  std::vector<unsigned> points = samplePoints(analysis, maxPoints);
  std::vector<SmallVector<unsigned>> top =
      largestLiveBuffers(analysis, points, /*count=*/5);

  os << kHtmlHead;
  // "</" inside a <script> would end it: llvm::json escapes no '/', so node
  // names like "/layer1/Conv" are written with "<\/" by hand below.
  std::string text;
  llvm::raw_string_ostream data(text);
  llvm::json::OStream json(data);
  json.objectBegin();
  json.attribute("function", function);
  json.attribute("num_ops", static_cast<int64_t>(schedule.size()));
  json.attributeObject("peak", [&] {
    json.attribute("bytes", analysis.getPeakBytes());
    json.attribute("point", analysis.getPeakPoint());
    Operation *op = analysis.getPeakOp();
    json.attribute("op", op ? op->getName().getStringRef() : "");
    json.attribute("node", op ? getOpName(op) : "");
  });
  if (options.budget)
    json.attribute("budget", *options.budget);
  if (options.plan)
    writePlanJSON(*options.plan, json);
  writePhasesJSON(analysis, json);
  json.attributeArray("includes", [&] {
    for (StringRef line : getReportIncludes())
      json.value(line);
  });
  json.attributeArray("excludes", [&] {
    for (StringRef line : getReportExcludes())
      json.value(line);
  });
  json.attributeArray("categories", [&] {
    for (unsigned c = 0; c < kNumMemoryCategories; ++c)
      json.value(getCategoryKey(categoryAt(c)));
  });
  json.attributeObject("live", [&] {
    for (unsigned c = 0; c < kNumMemoryCategories; ++c)
      json.attributeArray(getCategoryKey(categoryAt(c)), [&] {
        for (unsigned p : points)
          json.value(analysis.getTimeline()[p][c]);
      });
  });
  json.attributeArray("points", [&] {
    for (auto [i, p] : llvm::enumerate(points)) {
      json.objectBegin();
      json.attribute("point", p);
      json.attribute("op", schedule[p]->getName().getStringRef());
      json.attribute("node", getOpName(schedule[p]));
      json.attributeArray("top", [&] {
        for (unsigned index : top[i]) {
          json.objectBegin();
          json.attribute("name", getBufferName(buffers[index]));
          json.attribute("bytes", buffers[index].bytes);
          json.attribute("category", getCategoryKey(buffers[index].category));
          json.objectEnd();
        }
      });
      json.objectEnd();
    }
  });
  json.objectEnd();
  size_t from = 0;
  for (size_t at; (at = text.find("</", from)) != std::string::npos;
       from = at + 2)
    os << StringRef(text).slice(from, at) << "<\\/";
  os << StringRef(text).substr(from);
  os << kHtmlScript;
}

} // namespace vram
