// Shaded spheres (the ring scenes): one point sprite per particle, as large on screen as the
// sphere of radius a_radius; the fragment shader draws the sphere inside it. The same vertex
// buffer as the light sprites (render/particles.py VERTEX_DTYPE); colours as particles.vert.
uniform mat4 u_mvp;
uniform mat4 u_view;
uniform float u_scale;        // pixels per unit length at unit distance (projection)
uniform float u_min_size;     // smallest sprite in pixels
uniform vec3 u_offset;        // a ghost box's offset (0 for the box itself)
uniform int u_colour_mode;    // 0: by component, 2: colour map (1, galaxy, as component)
uniform vec2 u_range;
uniform vec3 u_component[8];
uniform vec3 u_lut[256];

attribute vec3 a_position;
attribute float a_component;
attribute float a_value;
attribute float a_radius;

varying vec3 v_rgb;

void main() {
    vec4 p = vec4(a_position + u_offset, 1.0);
    gl_Position = u_mvp * p;
    float dist = max(-(u_view * p).z, 1e-6);
    gl_PointSize = max(2.0 * a_radius * u_scale / dist, u_min_size);
    int code = int(clamp(a_component + 0.5, 0.0, 7.0));
    vec3 rgb = u_component[code];
    if (u_colour_mode == 2) {
        float t = clamp((a_value - u_range.x) / (u_range.y - u_range.x), 0.0, 1.0);
        rgb = u_lut[int(t * 255.0 + 0.5)];
    }
    v_rgb = rgb;
}
