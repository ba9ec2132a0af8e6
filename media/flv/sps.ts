import { BitReader, BitReaderError, removeEmulationPrevention } from "./bit-reader.ts";

export class SpsParseError extends Error {
  override readonly name = "SpsParseError";
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`H.264 SPS ${field}: ${detail}`);
  }
}

export interface H264Sps {
  /** Displayed size: coded size minus the frame cropping rectangle. */
  width: number;
  height: number;
  /** Size in whole macroblocks (e.g. 1920x1088 for 1080p). */
  codedWidth: number;
  codedHeight: number;
  profileIdc: number;
  /** Human name, e.g. "Main", "High". */
  profile: string;
  constraintFlags: number;
  levelIdc: number;
  /** e.g. "3.0", "4.1", "1b". */
  level: string;
  chromaFormatIdc: number;
  bitDepthLuma: number;
  bitDepthChroma: number;
  frameMbsOnly: boolean;
  crop: { left: number; right: number; top: number; bottom: number };
}

/** Profiles whose SPS carries chroma format, bit depth and scaling matrices (H.264 7.3.2.1.1). */
const HIGH_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);

const PROFILE_NAMES: Record<number, string> = {
  66: "Baseline",
  77: "Main",
  88: "Extended",
  100: "High",
  110: "High 10",
  122: "High 4:2:2",
  244: "High 4:4:4 Predictive",
  44: "CAVLC 4:4:4 Intra",
  83: "Scalable Baseline",
  86: "Scalable High",
  118: "Multiview High",
  128: "Stereo High",
};

/** Parses an SPS NAL unit (starting with its NAL header byte, type 7). */
export function parseSps(nal: Uint8Array): H264Sps {
  if (nal.length < 4) throw new SpsParseError("nal_unit", `too short (${nal.length} bytes)`);
  const nalType = nal[0]! & 0x1f;
  if (nalType !== 7) throw new SpsParseError("nal_unit_type", `expected 7 (SPS), got ${nalType}`);
  try {
    return parseRbsp(new BitReader(removeEmulationPrevention(nal.subarray(1))));
  } catch (err) {
    if (err instanceof BitReaderError) throw new SpsParseError(err.field, "truncated");
    throw err;
  }
}

function parseRbsp(r: BitReader): H264Sps {
  const profileIdc = r.u(8, "profile_idc");
  const constraintFlags = r.u(8, "constraint_set_flags");
  const levelIdc = r.u(8, "level_idc");
  const spsId = r.ue("seq_parameter_set_id");
  if (spsId > 31) throw new SpsParseError("seq_parameter_set_id", `out of range (${spsId})`);

  let chromaFormatIdc = 1; // inferred 4:2:0 when absent
  let separateColourPlane = false;
  let bitDepthLuma = 8;
  let bitDepthChroma = 8;
  if (HIGH_PROFILES.has(profileIdc)) {
    chromaFormatIdc = r.ue("chroma_format_idc");
    if (chromaFormatIdc > 3) throw new SpsParseError("chroma_format_idc", `out of range (${chromaFormatIdc})`);
    if (chromaFormatIdc === 3) separateColourPlane = r.flag("separate_colour_plane_flag");
    bitDepthLuma = 8 + r.ue("bit_depth_luma_minus8");
    bitDepthChroma = 8 + r.ue("bit_depth_chroma_minus8");
    r.flag("qpprime_y_zero_transform_bypass_flag");
    if (r.flag("seq_scaling_matrix_present_flag")) {
      const lists = chromaFormatIdc !== 3 ? 8 : 12;
      for (let i = 0; i < lists; i++) {
        if (r.flag(`seq_scaling_list_present_flag[${i}]`)) skipScalingList(r, i < 6 ? 16 : 64, i);
      }
    }
  }

  r.ue("log2_max_frame_num_minus4");
  const pocType = r.ue("pic_order_cnt_type");
  if (pocType === 0) {
    r.ue("log2_max_pic_order_cnt_lsb_minus4");
  } else if (pocType === 1) {
    r.flag("delta_pic_order_always_zero_flag");
    r.se("offset_for_non_ref_pic");
    r.se("offset_for_top_to_bottom_field");
    const cycle = r.ue("num_ref_frames_in_pic_order_cnt_cycle");
    if (cycle > 255) throw new SpsParseError("num_ref_frames_in_pic_order_cnt_cycle", `out of range (${cycle})`);
    for (let i = 0; i < cycle; i++) r.se(`offset_for_ref_frame[${i}]`);
  } else if (pocType !== 2) {
    throw new SpsParseError("pic_order_cnt_type", `out of range (${pocType})`);
  }
  r.ue("max_num_ref_frames");
  r.flag("gaps_in_frame_num_value_allowed_flag");
  const widthInMbs = r.ue("pic_width_in_mbs_minus1") + 1;
  const heightInMapUnits = r.ue("pic_height_in_map_units_minus1") + 1;
  const frameMbsOnly = r.flag("frame_mbs_only_flag");
  if (!frameMbsOnly) r.flag("mb_adaptive_frame_field_flag");
  r.flag("direct_8x8_inference_flag");
  const crop = { left: 0, right: 0, top: 0, bottom: 0 };
  if (r.flag("frame_cropping_flag")) {
    crop.left = r.ue("frame_crop_left_offset");
    crop.right = r.ue("frame_crop_right_offset");
    crop.top = r.ue("frame_crop_top_offset");
    crop.bottom = r.ue("frame_crop_bottom_offset");
  }
  // VUI (aspect ratio, timing) follows; nothing in it changes the picture size.

  const codedWidth = widthInMbs * 16;
  const codedHeight = (frameMbsOnly ? 1 : 2) * heightInMapUnits * 16;
  // Crop offsets are in chroma sample units (H.264 7.4.2.1.1, CropUnitX/Y).
  const chromaArrayType = separateColourPlane ? 0 : chromaFormatIdc;
  const subWidthC = chromaArrayType === 1 || chromaArrayType === 2 ? 2 : 1;
  const subHeightC = chromaArrayType === 1 ? 2 : 1;
  const cropUnitX = chromaArrayType === 0 ? 1 : subWidthC;
  const cropUnitY = (chromaArrayType === 0 ? 1 : subHeightC) * (frameMbsOnly ? 1 : 2);
  const width = codedWidth - (crop.left + crop.right) * cropUnitX;
  const height = codedHeight - (crop.top + crop.bottom) * cropUnitY;
  if (width <= 0) throw new SpsParseError("frame_crop_left_offset", `cropping leaves width ${width}`);
  if (height <= 0) throw new SpsParseError("frame_crop_top_offset", `cropping leaves height ${height}`);

  return {
    width,
    height,
    codedWidth,
    codedHeight,
    profileIdc,
    profile: PROFILE_NAMES[profileIdc] ?? `profile_idc ${profileIdc}`,
    constraintFlags,
    levelIdc,
    level: levelName(profileIdc, constraintFlags, levelIdc),
    chromaFormatIdc,
    bitDepthLuma,
    bitDepthChroma,
    frameMbsOnly,
    crop,
  };
}

/** Scaling lists are variable-length; they must be walked to reach the fields after them. */
function skipScalingList(r: BitReader, size: number, index: number): void {
  let last = 8;
  let next = 8;
  for (let j = 0; j < size; j++) {
    if (next !== 0) {
      const delta = r.se(`delta_scale[${index}][${j}]`);
      if (delta < -128 || delta > 127) throw new SpsParseError(`delta_scale[${index}]`, `out of range (${delta})`);
      next = (last + delta + 256) % 256;
    }
    last = next === 0 ? last : next;
  }
}

function levelName(profileIdc: number, constraintFlags: number, levelIdc: number): string {
  // Level 1b: level_idc 11 + constraint_set3 in Baseline/Main/Extended, or level_idc 9.
  if (levelIdc === 9 || (levelIdc === 11 && (constraintFlags & 0x10) !== 0 && [66, 77, 88].includes(profileIdc))) {
    return "1b";
  }
  return (levelIdc / 10).toFixed(1);
}
