// A finished RGB frame (and a caption) into one I420 (yuv420p) image, BT.709, limited range:
// target row r < H holds luma row r of the image (top row first); the rows below hold the U
// plane, then the V plane, two chroma rows of W/2 each per target row, so that reading the
// target bottom-up gives the planes in memory order.
uniform sampler2D u_frame;    // the frame, GL rows (bottom first)
uniform sampler2D u_caption;  // r: glyph coverage, g: outline (caption rows top first)
uniform vec2 u_size;          // W, H of the frame
uniform vec4 u_caption_box;   // x0, y0 (top-first), width, height in pixels; width 0: none

varying vec2 v_uv;

vec3 pixel(float x, float y) {  // the frame's pixel (x, y), y from the top, with the caption
    vec3 c = texture2D(u_frame, vec2((x + 0.5) / u_size.x, 1.0 - (y + 0.5) / u_size.y)).rgb;
    vec2 q = vec2(x, y) - u_caption_box.xy;
    if (u_caption_box.z > 0.0 && q.x >= 0.0 && q.y >= 0.0 && q.x < u_caption_box.z
            && q.y < u_caption_box.w) {
        vec2 m = texture2D(u_caption, (q + 0.5) / u_caption_box.zw).rg;
        c *= 1.0 - 0.8 * m.g;      // darken under and around the glyphs
        c += (1.0 - c) * m.r;      // then white glyphs
    }
    return c;
}

void main() {
    float x = floor(gl_FragCoord.x), r = floor(gl_FragCoord.y);
    float w = u_size.x, h = u_size.y, cw = 0.5 * w, ch = 0.5 * h;
    vec3 k = vec3(0.2126, 0.7152, 0.0722);
    float v;
    if (r < h) {
        v = (16.0 + 219.0 * dot(pixel(x, r), k)) / 255.0;
    } else {
        float j = 2.0 * (r - h) + (x >= cw ? 1.0 : 0.0);  // chroma row, U rows then V rows
        float cx = x >= cw ? x - cw : x;
        bool is_u = j < ch;
        float cy = is_u ? j : j - ch;
        vec3 c = 0.25 * (pixel(2.0 * cx, 2.0 * cy) + pixel(2.0 * cx + 1.0, 2.0 * cy)
                         + pixel(2.0 * cx, 2.0 * cy + 1.0) + pixel(2.0 * cx + 1.0, 2.0 * cy + 1.0));
        float y = dot(c, k);
        v = is_u ? (128.0 + 224.0 * (c.b - y) / 1.8556) / 255.0
                 : (128.0 + 224.0 * (c.r - y) / 1.5748) / 255.0;
    }
    gl_FragColor = vec4(v, 0.0, 0.0, 1.0);
}
