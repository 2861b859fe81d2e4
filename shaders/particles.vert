// Particle sprites. One vertex per particle: position, component code, and the value it is
// coloured by (render/colour.py). The colours are render/look.py's, as in
// kernels/render_splat.cu.
uniform mat4 u_mvp;           // perspective: the mvp; else the eye's frame (light/kernel.py)
uniform int u_projection;     // 0 perspective, 1 fisheye, 2 equirect (render/projections)
uniform float u_eye_number;   // fisheye: half the field of view (rad); equirect: eye radius
uniform vec2 u_eye_size;      // the eye's viewport, px
uniform float u_shift;        // equirect: this copy's shift across the seam, px
uniform vec2 u_gl_span;       // px of the GL viewport left of the eye's, and its width
uniform float u_point_size;   // sprite diameter in pixels
uniform float u_gain;         // light per particle (scaled with N by the renderer)
uniform int u_colour_mode;    // 0: by component, 1: by galaxy (a_value), 2: colour map,
                              // 3: by stellar population (u_population)
uniform vec2 u_range;         // a_value at the low and high end of the colour map
uniform vec4 u_component[8];  // rgb and brightness weight per component code
uniform vec3 u_galaxy[8];     // rgb per galaxy of origin (wrapping)
uniform vec3 u_population[8]; // rgb of each component's stars
uniform vec3 u_lut[256];      // the colour map

attribute vec3 a_position;
attribute float a_component;
attribute float a_value;

varying vec3 v_light;

// Where the particle lands in the eye's viewport (px, y up), as the splats place it
// (light/kernel.py _place); false where it is dropped.
bool place(vec3 c, out vec2 px) {
    px = vec2(0.0);
    if (u_projection == 1) {  // fisheye: right, image up, the dome's axis
        float r = length(c.xy);
        float theta = atan(r, c.z);
        if (theta > u_eye_number || r + abs(c.z) < 1e-30)
            return false;
        px = 0.5 * u_eye_size + c.xy * (theta / u_eye_number * 0.5
                                        * min(u_eye_size.x, u_eye_size.y) / max(r, 1e-30));
        return true;
    }
    // equirect: right, up, forward; u_eye_number the eye circle's signed radius
    float rho2 = dot(c.xz, c.xz);
    float e = u_eye_number;
    if ((e != 0.0 && rho2 <= e * e * 1.0001) || rho2 + c.y * c.y < 1e-30)
        return false;
    float lon = atan(c.x, c.z) + asin(e / sqrt(rho2));
    if (lon > 3.14159265)
        lon -= 6.28318531;
    else if (lon < -3.14159265)
        lon += 6.28318531;
    float lat = atan(c.y, sqrt(rho2 - e * e));
    px = vec2(0.5 + lon * 0.159154943, 0.5 + lat * 0.318309886) * u_eye_size;
    return true;
}

void main() {
    int code = int(clamp(a_component + 0.5, 0.0, 7.0));
    vec4 cw = u_component[code];
    float size = code == 3 ? 2.5 * u_point_size : u_point_size;  // black holes stand out
    vec4 clip = u_mvp * vec4(a_position, 1.0);
    if (u_projection == 0) {
        // GL drops a point whose centre is outside the view volume, as the CUDA and host
        // splats do; some drivers draw wide points partly inside it (guard bands): beyond the
        // far plane (which every GL clips), they are dropped there too
        bool outside = any(greaterThan(abs(clip.xyz), vec3(clip.w)));
        gl_Position = outside ? vec4(0.0, 0.0, 2.0, 1.0) : clip;
    } else {
        vec2 px;
        bool kept = place(clip.xyz, px);
        px.x += u_shift;
        float half_size = 0.5 * size;
        // a copy across the seam is drawn only where it reaches into the eye's viewport
        if (u_shift != 0.0 && (px.x + half_size < 0.0 || px.x - half_size > u_eye_size.x))
            kept = false;
        vec2 ndc = vec2((px.x + u_gl_span.x) / u_gl_span.y, px.y / u_eye_size.y) * 2.0 - 1.0;
        gl_Position = kept ? vec4(ndc, 0.0, 1.0) : vec4(0.0, 0.0, 2.0, 1.0);
    }
    vec3 rgb = cw.rgb;
    if (u_colour_mode == 1) {
        rgb = u_galaxy[int(mod(max(a_value, 0.0) + 0.5, 8.0))];
    } else if (u_colour_mode == 2) {
        float t = clamp((a_value - u_range.x) / (u_range.y - u_range.x), 0.0, 1.0);
        rgb = u_lut[int(t * 255.0 + 0.5)];
    } else if (u_colour_mode == 3) {
        rgb = u_population[code];
    }
    // the same light per particle whatever the sprite size (3 px is the reference)
    v_light = rgb * cw.a * u_gain * 9.0 / max(size * size, 1.0);
    gl_PointSize = size;
}
