// Particle sprites. One vertex per particle: position, component code, and the value it is
// coloured by (render/colour.py). The colours are render/look.py's, as in
// kernels/render_splat.cu.
uniform mat4 u_mvp;
uniform float u_point_size;   // sprite diameter in pixels
uniform float u_gain;         // light per particle (scaled with N by the renderer)
uniform int u_colour_mode;    // 0: by component, 1: by galaxy (a_value), 2: colour map
uniform vec2 u_range;         // a_value at the low and high end of the colour map
uniform vec4 u_component[8];  // rgb and brightness weight per component code
uniform vec3 u_galaxy[8];     // rgb per galaxy of origin (wrapping)
uniform vec3 u_lut[256];      // the colour map

attribute vec3 a_position;
attribute float a_component;
attribute float a_value;

varying vec3 v_light;

void main() {
    vec4 clip = u_mvp * vec4(a_position, 1.0);
    // GL drops a point whose centre is outside the view volume, as the CUDA and host splats
    // do; some drivers draw wide points partly inside it (guard bands): beyond the far plane
    // (which every GL clips), they are dropped there too
    bool outside = any(greaterThan(abs(clip.xyz), vec3(clip.w)));
    gl_Position = outside ? vec4(0.0, 0.0, 2.0, 1.0) : clip;
    int code = int(clamp(a_component + 0.5, 0.0, 7.0));
    vec4 cw = u_component[code];
    float size = code == 3 ? 2.5 * u_point_size : u_point_size;  // black holes stand out
    vec3 rgb = cw.rgb;
    if (u_colour_mode == 1) {
        rgb = u_galaxy[int(mod(max(a_value, 0.0) + 0.5, 8.0))];
    } else if (u_colour_mode == 2) {
        float t = clamp((a_value - u_range.x) / (u_range.y - u_range.x), 0.0, 1.0);
        rgb = u_lut[int(t * 255.0 + 0.5)];
    }
    // the same light per particle whatever the sprite size (3 px is the reference)
    v_light = rgb * cw.a * u_gain * 9.0 / max(size * size, 1.0);
    gl_PointSize = size;
}
